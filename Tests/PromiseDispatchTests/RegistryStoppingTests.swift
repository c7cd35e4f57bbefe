import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

@Suite("Registry: no command starts once the daemon is stopping")
struct RegistryStoppingTests {
    @Test("a parent settled while the daemon stops starts no command, in memory or durable: its exec child is rejected, saying why",
          arguments: [false, true])
    func noCommandAfterStop(durable: Bool) {
        let harness = durable ? RPCHarness(store: MemoryPromiseStore()) : RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("then", ["id": "a", "childId": "job", "exec": ["make"]], from: peer)
        harness.dispatcher.stop {}
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        harness.settleStore()
        #expect(harness.loop.processes.isEmpty)
        let record = harness.record("job", from: peer)
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["message"] == "not run: the daemon is stopping")
    }
}
