import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import Testing

@Suite("Registry: numbers as written")
struct RegistryNumberTests {
    @Test("a value with numbers no Double holds comes back byte for byte from get, from all, and after a restart")
    func numbersSurviveEveryPath() throws {
        let line = #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"id":"big","value":[18446744073709551615,3.14159265358979323846264,1e400,1e-400,3e-324]}}"#
        let written = "[18446744073709551615,3.14159265358979323846264,1e400,1e-400,3e-324]"
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        first.call("create", ["id": "big"], from: peer)
        first.send(line, from: peer)
        first.call("all", ["ids": ["big"], "id": "both"], from: peer)
        #expect(first.record("big", from: peer)["value"]?.description == written)
        #expect(first.record("both", from: peer)["value"]?.description == "[\(written)]")
        first.settleStore()

        let second = RPCHarness(store: store)
        second.registry.restore(try store.load())
        let client = second.connect()
        #expect(second.record("big", from: client)["value"]?.description == written)
    }
}
