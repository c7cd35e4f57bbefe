import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry
import Testing

@Suite("Registry: then, chaining and cancellation")
struct RegistryThenTests {
    @Test("a then child without exec follows its parent's value")
    func followsValue() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        let child = harness.call("then", ["id": "a", "childId": "b"], from: peer)
        #expect(child["id"] == "b")
        #expect(child["parent"] == "a")
        #expect(child["state"] == "pending")
        #expect(harness.record("a", from: peer)["children"] == ["b"])
        harness.call("resolve", ["id": "a", "value": ["x": 1]], from: peer)
        #expect(harness.record("b", from: peer)["value"] == ["x": 1])
    }

    @Test("a then child without exec follows its parent's rejection, whatever `on` says",
          arguments: ["fulfilled", "rejected", "settled"])
    func followsRejection(on: String) {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("then", ["id": "a", "childId": "b", "on": .string(on)], from: peer)
        harness.call("then", ["id": "a", "childId": "c", "on": .string(on)], from: peer)
        harness.call("reject", ["id": "a", "reason": ["code": 3, "message": "broken"]], from: peer)
        let child = harness.record("b", from: peer)
        #expect(child["state"] == "rejected")
        #expect(child["reason"] == ["code": 3, "message": "broken", "origin": "a"])
    }

    @Test("a then child of an already settled parent settles at once; without childId it gets an id")
    func childOfSettledParent() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "a", "value": 5], from: peer)
        let child = harness.call("then", ["id": "a"], from: peer)
        #expect(child["state"] == "fulfilled")
        #expect(child["value"] == 5)
        #expect(child["id"]?.stringValue?.isEmpty == false)
    }

    struct ThenParams: Sendable, CustomTestStringConvertible {
        var params: JSONValue
        var param: String
        init(_ params: JSONValue, _ param: String) {
            self.params = params
            self.param = param
        }
        var testDescription: String { params.description }
    }

    static let invalidParamsCases: [ThenParams] = [
        ThenParams(["id": "a", "on": "always"], "on"),
        ThenParams(["id": "a", "exec": []], "exec"),
        ThenParams(["id": "a", "exec": [""]], "exec"),
        ThenParams(["id": "a", "exec": "ls"], "exec"),
        ThenParams(["id": "a", "exec": ["ls", 1]], "exec"),
        ThenParams(["id": "a", "cwd": "/tmp"], "cwd"),
        ThenParams(["id": "a", "env": ["A": "1"]], "env"),
        ThenParams(["id": "a", "exec": ["ls"], "cwd": 1], "cwd"),
        ThenParams(["id": "a", "exec": ["ls"], "env": ["A": 1]], "env"),
        ThenParams(["id": "a", "childId": ""], "childId"),
        ThenParams([:], "id"),
    ]

    @Test("then checks its params", arguments: invalidParamsCases)
    func invalidParams(_ invalid: ThenParams) {
        let (params, param) = (invalid.params, invalid.param)
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        let message = harness.answer("then", params, from: peer)
        #expect(message["error"]?["code"] == -32602)
        #expect(message["error"]?["data"]?["param"] == .string(param))
        #expect(harness.registry.count == 1)
    }

    @Test("then with a childId in use gets -32006, or the existing record with ifExists get")
    func childIDTaken() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("create", ["id": "b"], from: peer)
        #expect(harness.errorCode("then", ["id": "a", "childId": "b"], from: peer) == -32006)
        #expect(harness.errorCode("then", ["id": "a", "childId": "a"], from: peer) == -32006)
        #expect(harness.call("then", ["id": "a", "childId": "b", "ifExists": "get"], from: peer)["parent"] == .null)
    }

    // MARK: Cancellation through remote chains

    @Test("cancelling a parent cancels its pending children and their children")
    func cancelDown() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("then", ["id": "a", "childId": "b"], from: peer)
        harness.call("then", ["id": "b", "childId": "c"], from: peer)
        harness.call("then", ["id": "a", "childId": "d"], from: peer)
        harness.call("subscribe", ["ids": ["c"]], from: peer)
        harness.call("cancel", ["id": "a"], from: peer)
        for id in ["a", "b", "c", "d"] {
            #expect(harness.state(id, from: peer) == "cancelled", "\(id)")
        }
        #expect(JSONValue.notifications("settled", in: peer.messages).first?["params"]?["state"] == "cancelled")
    }

    @Test("cancelling a parent leaves already settled children as they are")
    func cancelDownKeepsSettled() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("then", ["id": "a", "childId": "b"], from: peer)
        harness.call("then", ["id": "a", "childId": "c"], from: peer)
        harness.call("resolve", ["id": "b", "value": "early"], from: peer)
        harness.call("cancel", ["id": "a"], from: peer)
        #expect(harness.state("b", from: peer) == "fulfilled")
        #expect(harness.state("c", from: peer) == "cancelled")
    }

    @Test("cancelling a parent's only child cancels the parent too")
    func cancelUpOnlyChild() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("then", ["id": "a", "childId": "b"], from: peer)
        harness.call("then", ["id": "b", "childId": "c"], from: peer)
        harness.call("cancel", ["id": "c"], from: peer)
        #expect(harness.state("c", from: peer) == "cancelled")
        #expect(harness.state("b", from: peer) == "cancelled")
        #expect(harness.state("a", from: peer) == "cancelled")
    }

    @Test("cancelling one child of several cancels it alone; the last one takes the parent along")
    func cancelUpLastChild() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("then", ["id": "a", "childId": "b"], from: peer)
        harness.call("then", ["id": "a", "childId": "c"], from: peer)
        harness.call("cancel", ["id": "b"], from: peer)
        #expect(harness.state("b", from: peer) == "cancelled")
        #expect(harness.state("a", from: peer) == "pending")
        #expect(harness.state("c", from: peer) == "pending")
        harness.call("cancel", ["id": "c"], from: peer)
        #expect(harness.state("a", from: peer) == "cancelled")
    }

    @Test("subscriptions and waits do not count as children: a watched parent is still cancelled with its last child")
    func observersAreNotChildren() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("subscribe", ["ids": ["a"]], from: peer)
        harness.request("wait", ["id": "a"], from: peer)
        harness.call("then", ["id": "a", "childId": "b"], from: peer)
        harness.call("cancel", ["id": "b"], from: peer)
        #expect(harness.state("a", from: peer) == "cancelled")
    }
}
