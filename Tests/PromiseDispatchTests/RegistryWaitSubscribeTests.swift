@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
import PromiseTestSupport
import Testing
import PromiseStore

@Suite("Registry: wait, subscribe, unsubscribe")
struct RegistryWaitSubscribeTests {
    @Test("wait on a settled promise answers at once with its record")
    func waitSettled() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("reject", ["id": "a", "reason": "no"], from: peer)
        let record = harness.call("wait", ["id": "a"], from: peer)
        #expect(record["state"] == "rejected")
    }

    @Test("wait on a pending promise answers when it settles")
    func waitPending() {
        let harness = RPCHarness()
        let waiter = harness.connect()
        let settler = harness.connect()
        harness.call("create", ["id": "a"], from: settler)
        let id = harness.request("wait", ["id": "a"], from: waiter)
        #expect(waiter.takeMessages().isEmpty)
        harness.call("resolve", ["id": "a", "value": 42], from: settler)
        let messages = waiter.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?["id"] == .int(id))
        #expect(messages.first?["result"]?["value"] == 42)
    }

    @Test("wait before create is answered once the id is created and settled")
    func waitBeforeCreate() {
        let harness = RPCHarness()
        let waiter = harness.connect()
        let creator = harness.connect()
        let id = harness.request("wait", ["id": "later"], from: waiter)
        harness.call("create", ["id": "later"], from: creator)
        #expect(waiter.takeMessages().isEmpty)
        harness.call("resolve", ["id": "later", "value": "here"], from: creator)
        let messages = waiter.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?["id"] == .int(id))
        #expect(messages.first?["result"]?["value"] == "here")
    }

    @Test("a wait before create is answered when the id appears already settled (a then child of a settled parent)")
    func waitBeforeCreateSettled() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("resolve", ["id": "parent", "value": 1], from: peer)
        let id = harness.request("wait", ["id": "child"], from: peer)
        harness.call("then", ["id": "parent", "childId": "child"], from: peer)
        let answer = peer.messages.first { $0["id"] == .int(id) }
        #expect(answer?["result"]?["value"] == 1)
    }

    @Test("wait with timeoutMs gets -32005 when it passes, and the promise stays pending")
    func waitTimeout() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        peer.takeMessages()
        let id = harness.request("wait", ["id": "a", "timeoutMs": 100], from: peer)
        harness.loop.advance(by: 99)
        #expect(peer.takeMessages().isEmpty)
        harness.loop.advance(by: 1)
        let messages = peer.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?["id"] == .int(id))
        #expect(messages.first?["error"]?["code"] == -32005)
        #expect(messages.first?["error"]?["data"]?["state"] == "pending")
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(peer.takeMessages().count == 1)   // only the resolve's answer: the waiter is gone
    }

    @Test("a wait before create with timeoutMs times out with -32005 when nothing is created")
    func waitBeforeCreateTimeout() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.request("wait", ["id": "never", "timeoutMs": 10], from: peer)
        harness.loop.advance(by: 10)
        let message = peer.takeMessages().first
        #expect(message?["error"]?["code"] == -32005)
        #expect(message?["error"]?["data"]?["id"] == "never")
    }

    @Test("a wait answered in time stops its timer")
    func waitTimerStopped() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.request("wait", ["id": "a", "timeoutMs": 100], from: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(harness.loop.liveTimers == 0)
        harness.loop.advance(by: 200)
        #expect(JSONValue.notifications("settled", in: peer.messages).isEmpty)
        #expect(peer.messages.filter { $0["error"] != nil }.isEmpty)
    }

    @Test("several waits on one id are all answered")
    func severalWaits() {
        let harness = RPCHarness()
        let first = harness.connect()
        let second = harness.connect()
        harness.call("create", ["id": "a"], from: first)
        harness.request("wait", ["id": "a"], from: first)
        harness.request("wait", ["id": "a"], from: first)
        harness.request("wait", ["id": "a"], from: second)
        harness.call("cancel", ["id": "a"], from: second)
        #expect(first.messages.filter { $0["result"]?["state"] == "cancelled" }.count == 2)   // its 2 waits
        #expect(second.messages.filter { $0["result"]?["state"] == "cancelled" }.count == 2)  // wait + cancel
    }

    @Test("waits of a closed connection are dropped and their timers stopped")
    func waitersDroppedOnClose() {
        let harness = RPCHarness()
        let peer = harness.connect()
        let other = harness.connect()
        harness.call("create", ["id": "a"], from: other)
        harness.request("wait", ["id": "a", "timeoutMs": 100], from: peer)
        harness.request("wait", ["id": "b"], from: peer)
        let count = peer.sent.count
        harness.close(peer)
        #expect(harness.loop.liveTimers == 0)
        harness.call("resolve", ["id": "a"], from: other)
        harness.loop.advance(by: 200)
        #expect(peer.sent.count == count)
    }

    @Test("maxWaitersPerConnection bounds pending waits with -32004, per connection")
    func waiterLimit() {
        var limits = DaemonLimits()
        limits.maxWaitersPerConnection = 2
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        let other = harness.connect()
        harness.request("wait", ["id": "a"], from: peer)
        harness.request("wait", ["id": "b"], from: peer)
        let message = harness.answer("wait", ["id": "c"], from: peer)
        #expect(message["error"]?["code"] == -32004)
        #expect(message["error"]?["data"]?["limit"] == "maxWaitersPerConnection")
        harness.request("wait", ["id": "c"], from: other)
        #expect(other.takeMessages().isEmpty)
        // A wait on a settled promise answers at once and takes no slot.
        harness.call("create", ["id": "s"], from: other)
        harness.call("resolve", ["id": "s"], from: other)
        #expect(harness.call("wait", ["id": "s"], from: peer)["state"] == "fulfilled")
    }

    @Test("wait params are checked", arguments: [["id": 1] as JSONValue, [:], ["id": "a", "timeoutMs": -5]])
    func waitInvalidParams(params: JSONValue) {
        let harness = RPCHarness()
        let peer = harness.connect()
        #expect(harness.errorCode("wait", params, from: peer) == -32602)
    }

    @Test("subscribe answers with the count and sends one settled notification carrying the record")
    func subscribe() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let other = harness.connect()
        harness.call("create", ["id": "a"], from: other)
        harness.call("create", ["id": "b"], from: other)
        #expect(harness.call("subscribe", ["ids": ["a", "b", "a"]], from: peer) == ["subscribed": 2])
        harness.call("resolve", ["id": "a", "value": "A"], from: other)
        harness.call("reject", ["id": "b", "reason": "B"], from: other)
        let settled = JSONValue.notifications("settled", in: peer.takeMessages())
        #expect(settled.count == 2)
        #expect(settled[0] == ["jsonrpc": "2.0", "method": "settled", "params": harness.record("a", from: other)])
        #expect(settled[1]["params"]?["reason"] == ["message": "B", "origin": "b"])
    }

    @Test("subscribe to an already settled promise sends settled at once, after the answer")
    func subscribeAfterSettle() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        peer.takeMessages()
        let id = harness.request("subscribe", ["ids": ["a"]], from: peer)
        let messages = peer.takeMessages()
        #expect(messages.count == 2)
        #expect(messages.first?["id"] == .int(id))
        #expect(messages.first?["result"] == ["subscribed": 1])
        #expect(messages.last?["method"] == "settled")
        #expect(messages.last?["params"]?["value"] == 1)
    }

    @Test("subscribe to an id not created yet: settled is sent once it is created and settles")
    func subscribeBeforeCreate() {
        let harness = RPCHarness()
        let peer = harness.connect()
        let other = harness.connect()
        #expect(harness.call("subscribe", ["ids": ["future"]], from: peer) == ["subscribed": 1])
        harness.call("create", ["id": "future"], from: other)
        #expect(JSONValue.notifications("settled", in: peer.messages).isEmpty)
        harness.call("resolve", ["id": "future", "value": true], from: other)
        let settled = JSONValue.notifications("settled", in: peer.messages)
        #expect(settled.count == 1)
        #expect(settled.first?["params"]?["id"] == "future")
    }

    @Test("progress notifications go to subscribers while pending, with the message")
    func progressNotifications() {
        let harness = RPCHarness()
        let peer = harness.connect()
        let other = harness.connect()
        harness.call("create", ["id": "a"], from: other)
        harness.call("subscribe", ["ids": ["a"]], from: peer)
        harness.call("progress", ["id": "a", "progress": 0.5, "message": "half"], from: other)
        harness.call("progress", ["id": "a", "progress": 0.75], from: other)
        let progress = JSONValue.notifications("progress", in: peer.messages)
        #expect(progress.count == 2)
        #expect(progress.first == ["jsonrpc": "2.0", "method": "progress",
                                   "params": ["id": "a", "progress": 0.5, "message": "half"]])
        #expect(progress.last?["params"]?["progress"]?.doubleValue == 0.75)
        #expect(JSONValue.notifications("progress", in: other.messages).isEmpty)
    }

    @Test("subscribing to an id before its create still brings its progress notifications")
    func progressSubscribedBeforeCreate() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("subscribe", ["ids": ["later"]], from: peer)
        harness.call("create", ["id": "later"], from: peer)
        harness.call("progress", ["id": "later", "progress": 0.3], from: peer)
        let progress = JSONValue.notifications("progress", in: peer.messages)
        #expect(progress.map { $0["params"]?["progress"]?.doubleValue } == [0.3])
    }

    @Test("a first subscriber of a promise with progress hears only later changes, not the progress so far")
    func progressSubscribedMidway() {
        let harness = RPCHarness()
        let peer = harness.connect()
        let first = harness.connect()
        let second = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("progress", ["id": "a", "progress": 0.25], from: peer)
        harness.call("subscribe", ["ids": ["a"]], from: first)
        harness.call("subscribe", ["ids": ["a"]], from: second)
        #expect(JSONValue.notifications("progress", in: first.messages).isEmpty)
        harness.call("progress", ["id": "a", "progress": 0.5], from: peer)
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        for subscriber in [first, second] {
            let progress = JSONValue.notifications("progress", in: subscriber.messages)
            #expect(progress.map { $0["params"]?["progress"]?.doubleValue } == [0.5])
            #expect(JSONValue.notifications("settled", in: subscriber.messages).count == 1)
        }
    }

    @Test("a then child's progress follows its parent's, and its subscribers hear it")
    func derivedProgress() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("then", ["id": "a", "childId": "b"], from: peer)
        harness.call("subscribe", ["ids": ["b"]], from: peer)
        harness.call("progress", ["id": "a", "progress": 0.4], from: peer)
        let progress = JSONValue.notifications("progress", in: peer.messages)
        #expect(progress.last?["params"]?["id"] == "b")
        #expect(progress.last?["params"]?["progress"]?.doubleValue == 0.4)
    }

    @Test("unsubscribe stops notifications and counts what it removed")
    func unsubscribe() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("subscribe", ["ids": ["a", "later"]], from: peer)
        #expect(harness.call("unsubscribe", ["ids": ["a", "never-subscribed"]], from: peer) == ["unsubscribed": 1])
        harness.call("progress", ["id": "a", "progress": 0.5], from: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(JSONValue.notifications("settled", in: peer.messages).isEmpty)
        #expect(JSONValue.notifications("progress", in: peer.messages).isEmpty)
    }

    @Test("a delivered subscription is spent: no second settled, and its slot is free again")
    func subscriptionSpent() {
        var limits = DaemonLimits()
        limits.maxSubscriptionsPerConnection = 1
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("subscribe", ["ids": ["a"]], from: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(harness.call("unsubscribe", ["ids": ["a"]], from: peer) == ["unsubscribed": 0])
        #expect(harness.call("subscribe", ["ids": ["b"]], from: peer) == ["subscribed": 1])
        #expect(JSONValue.notifications("settled", in: peer.messages).count == 1)
    }

    @Test("an ended subscription's id, forgotten and made again, can be subscribed to again and is told once more")
    func endedSubscriptionRenewed() {
        var limits = DaemonLimits()
        limits.maxSubscriptionsPerConnection = 1
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        #expect(harness.call("subscribe", ["ids": ["a"]], from: peer) == ["subscribed": 1])
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        harness.call("forget", ["ids": ["a"]], from: peer)
        harness.call("create", ["id": "a"], from: peer)
        #expect(harness.call("subscribe", ["ids": ["a"]], from: peer) == ["subscribed": 1])
        #expect(harness.errorCode("subscribe", ["ids": ["b"]], from: peer) == -32004)
        harness.call("resolve", ["id": "a", "value": 2], from: peer)
        let settled = JSONValue.notifications("settled", in: peer.messages)
        #expect(settled.map { $0["params"]?["value"] } == [1, 2])
        #expect(harness.call("unsubscribe", ["ids": ["a"]], from: peer) == ["unsubscribed": 0])
        #expect(harness.call("subscribe", ["ids": ["b"]], from: peer) == ["subscribed": 1])
        #expect(harness.errorCode("subscribe", ["ids": ["c"]], from: peer) == -32004)
    }

    @Test("a connection that closes holding an ended subscription leaves another's live one to the same id alone")
    func closeWithEndedSubscription() {
        let harness = RPCHarness()
        let leaving = harness.connect()
        let staying = harness.connect()
        harness.call("create", ["id": "a"], from: staying)
        harness.call("subscribe", ["ids": ["a"]], from: leaving)
        harness.call("resolve", ["id": "a", "value": 1], from: staying)
        harness.call("forget", ["ids": ["a"]], from: staying)
        harness.call("create", ["id": "a"], from: staying)
        harness.call("subscribe", ["ids": ["a"]], from: staying)
        harness.close(leaving)
        harness.call("resolve", ["id": "a", "value": 2], from: staying)
        let settled = JSONValue.notifications("settled", in: staying.messages)
        #expect(settled.map { $0["params"]?["value"] } == [2])
        #expect(JSONValue.notifications("settled", in: leaving.messages).map { $0["params"]?["value"] } == [1])
    }

    @Test("a connection whose subscriptions keep ending can always fill its limit again, and keeps few ended ids")
    func endedSubscriptionsFreeTheirSlots() throws {
        var limits = DaemonLimits()
        limits.maxSubscriptionsPerConnection = 100
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        for round in 0..<5 {
            let ids = (0..<100).map { JSONValue.string("r\(round).\($0)") }
            for id in ids { harness.call("create", ["id": id], from: peer) }
            #expect(harness.call("subscribe", ["ids": .array(ids)], from: peer) == ["subscribed": 100])
            #expect(harness.errorCode("subscribe", ["ids": ["one-more"]], from: peer) == -32004)
            for id in ids { harness.call("resolve", ["id": id], from: peer) }
        }
        #expect(JSONValue.notifications("settled", in: peer.messages).count == 500)
        let session = try #require(harness.registry.sessions[peer.connectionID])
        #expect(session.subscriptionCount == 0)
        // Ended ids are dropped once they outnumber the live ones and 64.
        #expect(session.subscribedIDs.count <= 64)
        harness.close(peer)
        #expect(harness.registry.subscribers.isEmpty)
    }

    @Test("maxSubscriptionsPerConnection bounds subscribe with -32004, adding none of the ids")
    func subscriptionLimit() {
        var limits = DaemonLimits()
        limits.maxSubscriptionsPerConnection = 2
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("subscribe", ["ids": ["a"]], from: peer)
        let message = harness.answer("subscribe", ["ids": ["b", "c"]], from: peer)
        #expect(message["error"]?["code"] == -32004)
        #expect(message["error"]?["data"]?["limit"] == "maxSubscriptionsPerConnection")
        #expect(harness.call("unsubscribe", ["ids": ["b", "c"]], from: peer) == ["unsubscribed": 0])
        #expect(harness.call("subscribe", ["ids": ["a", "b"]], from: peer) == ["subscribed": 2])
    }

    @Test("subscriptions of a closed connection are removed")
    func subscriptionsRemovedOnClose() {
        let harness = RPCHarness()
        let peer = harness.connect()
        let other = harness.connect()
        harness.call("create", ["id": "a"], from: other)
        harness.call("subscribe", ["ids": ["a"]], from: peer)
        let count = peer.sent.count
        harness.close(peer)
        harness.call("resolve", ["id": "a"], from: other)
        #expect(peer.sent.count == count)
    }

    @Test("when one of several subscribers closes, the others are still told, once each")
    func otherSubscribersKeptOnClose() {
        let harness = RPCHarness()
        let owner = harness.connect()
        let first = harness.connect()
        let leaving = harness.connect()
        let last = harness.connect()
        harness.call("create", ["id": "a"], from: owner)
        for peer in [first, leaving, last] { harness.call("subscribe", ["ids": ["a"]], from: peer) }
        let leavingCount = leaving.sent.count
        harness.close(leaving)
        harness.call("resolve", ["id": "a", "value": 1], from: owner)
        #expect(leaving.sent.count == leavingCount)
        for peer in [first, last] {
            let settled = JSONValue.notifications("settled", in: peer.messages)
            #expect(settled.map { $0["params"]?["id"] } == ["a"])
        }
    }

    @Test("subscribe params are checked",
          arguments: [[:] as JSONValue, ["ids": "a"], ["ids": [1]], ["ids": [""]], ["ids": ["a\u{0}"]]])
    func subscribeInvalidParams(params: JSONValue) {
        let harness = RPCHarness()
        let peer = harness.connect()
        #expect(harness.errorCode("subscribe", params, from: peer) == -32602)
        #expect(harness.errorCode("unsubscribe", params, from: peer) == -32602)
    }
}
