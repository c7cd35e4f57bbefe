import Promise
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
import PromiseTestSupport
import Testing
import PromiseStore

/// When the registry acts on what its observers hear (SettlementRelay):
/// right after the answer being written, or through the executor, never
/// out of order.
@Suite("Registry: settlements acted on after the answer, in order")
struct RegistrySettlementRelayTests {
    @Test("a promise settled by a request has its waiters answered right after that answer, with no turn of the loop")
    func settledByARequestIsActedOnAfterItsAnswer() {
        let loop = RPCManualExecutor()
        let harness = RPCHarness(executor: loop)
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        let wait = harness.request("wait", ["id": "a"], from: peer)
        peer.takeMessages()
        let resolve = harness.request("resolve", ["id": "a", "value": 7], from: peer)
        let messages = peer.takeMessages()
        // The resolve's own answer first, then the waiter's: both before the loop turns.
        #expect(messages.map { $0["id"] } == [.int(resolve), .int(wait)])
        #expect(messages.last?["result"]?["value"] == 7)
        #expect(loop.isEmpty)
    }

    @Test("a settlement heard while progress still waits in the executor waits behind it: subscribers hear progress, then settled")
    func settlementWaitsBehindEarlierProgress() throws {
        let loop = RPCManualExecutor()
        let harness = RPCHarness(executor: loop)
        let subscriber = harness.connect()
        let settler = harness.connect()
        harness.call("create", ["id": "a"], from: settler)
        harness.call("subscribe", ["ids": ["a"]], from: subscriber)
        subscriber.takeMessages()
        // Progress from outside any answer (as a running command's is): it goes through the executor.
        let entry = try #require(harness.registry.entries["a"])
        harness.registry.promise(of: entry).reportProgress(0.5)
        #expect(!loop.isEmpty)
        harness.call("resolve", ["id": "a", "value": 1], from: settler)
        #expect(subscriber.takeMessages().isEmpty)
        loop.drain()
        let told = subscriber.takeMessages()
        #expect(told.map { $0["method"] } == ["progress", "settled"])
        #expect(told.first?["params"]?["progress"] == 0.5)
        #expect(told.last?["params"]?["state"] == "fulfilled")
    }

    @Test("a settlement outside any answer (a timeout) is acted on in the loop's next turn")
    func settlementOutsideAnAnswerGoesThroughTheExecutor() {
        let loop = RPCManualExecutor()
        let harness = RPCHarness(executor: loop)
        let peer = harness.connect()
        harness.call("create", ["id": "a", "timeoutMs": 10], from: peer)
        let wait = harness.request("wait", ["id": "a"], from: peer)
        peer.takeMessages()
        harness.loop.advance(by: 10)
        #expect(peer.takeMessages().isEmpty)
        loop.drain()
        let messages = peer.takeMessages()
        #expect(messages.map { $0["id"] } == [.int(wait)])
        #expect(messages.first?["result"]?["state"] == "rejected")
    }
}
