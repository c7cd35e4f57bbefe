@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import Testing

/// Numbers handed out never come back after a restart, even when the
/// promises that had them were removed before it.
@Suite("Registry: daemon-made ids and sequences across restarts")
struct RegistryCountersTests {
    @Test("a restart after the newest daemon-made promises were forgotten hands out new ids and later sequences")
    func numbersDoNotGoBack() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        first.call("create", ["id": "kept"], from: peer)
        var made: [String] = []
        for _ in 0..<3 {
            let record = first.call("create", from: peer)
            let id = try #require(record["id"]?.stringValue)
            made.append(id)
            first.call("resolve", ["id": .string(id)], from: peer)
        }
        #expect(made == ["p1", "p2", "p3"])
        let lastSequence = try #require(first.registry.entries["p3"]?.sequence)
        first.call("forget", ["ids": .array(made.map(JSONValue.string))], from: peer)
        first.settleStore()

        let second = RPCHarness(store: store)
        second.registry.restore(try store.load())
        let client = second.connect()
        let next = second.call("create", from: client)
        #expect(next["id"] == "p4")
        #expect((second.registry.entries["p4"]?.sequence ?? 0) > lastSequence)
    }
}
