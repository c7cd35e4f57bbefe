@testable import PromiseJSON
@testable import PromiseStore
import Testing

/// Two spellings of an id that Swift Strings call equal stay two promises
/// through the dispatcher, the registry and the journal.
@Suite("Promise ids compared by code points, through the dispatcher")
struct PromiseKeyTests {
    private let precomposed = "caf\u{E9}"
    private let decomposed = "cafe\u{301}"

    @Test("a decomposed id is another promise than its precomposed twin: create, settle, get and wait keep them apart")
    func registryKeepsSpellingsApart() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": .string(precomposed)], from: peer)
        harness.call("create", ["id": .string(decomposed)], from: peer)
        harness.call("resolve", ["id": .string(decomposed), "value": "decomposed"], from: peer)
        #expect(harness.state(precomposed, from: peer) == "pending")
        #expect(harness.record(decomposed, from: peer)["value"] == "decomposed")
        #expect(harness.call("info", from: peer)["promises"] == 2)
    }

    @Test("both spellings changed in one turn are both stored")
    func journalWritesBothSpellings() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        let peer = harness.connect()
        harness.call("create", ["id": .string(precomposed)], from: peer)
        harness.call("create", ["id": .string(decomposed)], from: peer)
        harness.settleStore()
        let ids = try store.load().promises.map(\.id)
        #expect(ids.count == 2)
        #expect(ids.contains { $0.utf8.elementsEqual(precomposed.utf8) })
        #expect(ids.contains { $0.utf8.elementsEqual(decomposed.utf8) })
    }
}
