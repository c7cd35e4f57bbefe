import Foundation
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
import PromiseTestSupport
import Testing

/// The daemon-wide caps on waits and subscriptions for ids no promise has
/// yet (issue 22, item 7): every way such a watch ends gives its room back —
/// the id created, the wait timed out, the subscription ended, the
/// connection closed.
@Suite("Registry: caps on watches of ids not created yet")
struct RegistryUncreatedWatchTests {
    private func harness() -> RPCHarness {
        var limits = DaemonLimits()
        limits.maxWaitersForUncreatedIDs = 1
        limits.maxSubscriptionsToUncreatedIDs = 1
        return RPCHarness(limits: limits)
    }

    @Test("a wait for an id not created yet takes the one place until it times out")
    func waitTimeoutFreesPlace() {
        let harness = harness()
        let peer = harness.connect()
        harness.request("wait", ["id": "a", "timeoutMs": 10], from: peer)
        let refused = harness.answer("wait", ["id": "b"], from: peer)
        #expect(refused["error"]?["code"] == -32004)
        #expect(refused["error"]?["data"] == ["limit": "maxWaitersForUncreatedIDs", "value": 1])
        harness.loop.advance(by: 10)
        #expect(harness.registry.uncreatedWatches.waiters == 0)
        harness.request("wait", ["id": "b"], from: peer)
        #expect(harness.registry.uncreatedWatches.waiters == 1)
    }

    @Test("a wait for a promise that exists does not count; creating the awaited id frees the place")
    func creationFreesPlace() {
        let harness = harness()
        let peer = harness.connect()
        harness.call("create", ["id": "exists"], from: peer)
        harness.request("wait", ["id": "exists"], from: peer)
        harness.request("wait", ["id": "a"], from: peer)
        #expect(harness.registry.uncreatedWatches.waiters == 1)
        harness.call("create", ["id": "a"], from: peer)
        #expect(harness.registry.uncreatedWatches.waiters == 0)
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        #expect(harness.registry.uncreatedWatches.waiters == 0)
    }

    @Test("unsubscribing, creating the id and closing the connection each give a subscription's place back")
    func subscriptionPlaceReturned() {
        let harness = harness()
        let peer = harness.connect()
        harness.call("subscribe", ["ids": ["x"]], from: peer)
        #expect(harness.errorCode("subscribe", ["ids": ["y"]], from: peer) == -32004)
        harness.call("unsubscribe", ["ids": ["x"]], from: peer)
        harness.call("subscribe", ["ids": ["y"]], from: peer)
        harness.call("create", ["id": "y"], from: peer)
        #expect(harness.registry.uncreatedWatches.subscriptions == 0)
        harness.call("subscribe", ["ids": ["z"]], from: peer)
        harness.close(peer)
        #expect(harness.registry.uncreatedWatches.isEmpty)
        let other = harness.connect()
        harness.call("subscribe", ["ids": ["w"]], from: other)
    }
}
