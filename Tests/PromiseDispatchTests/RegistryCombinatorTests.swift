import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry
import Testing

@Suite("Registry: all, any, race, allSettled")
struct RegistryCombinatorTests {
    private func setUp(_ ids: [String]) -> (RPCHarness, RPCFakePeer) {
        let harness = RPCHarness()
        let peer = harness.connect()
        for id in ids { harness.call("create", ["id": .string(id)], from: peer) }
        return (harness, peer)
    }

    @Test("all (fail-fast) fulfils with the values in input order")
    func allValues() {
        let (harness, peer) = setUp(["a", "b"])
        let record = harness.call("all", ["ids": ["a", "b"], "id": "both"], from: peer)
        #expect(record["id"] == "both")
        #expect(record["inputs"] == ["a", "b"])
        #expect(record["parent"] == .null)
        harness.call("resolve", ["id": "b", "value": 2], from: peer)
        #expect(harness.state("both", from: peer) == "pending")
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        #expect(harness.record("both", from: peer)["value"] == [1, 2])
    }

    @Test("all (fail-fast) rejects with the first rejection")
    func allFailFast() {
        let (harness, peer) = setUp(["a", "b"])
        harness.call("all", ["ids": ["a", "b"], "id": "both", "policy": "fail-fast"], from: peer)
        harness.call("reject", ["id": "b", "reason": "b broke"], from: peer)
        #expect(harness.record("both", from: peer)["reason"] == ["message": "b broke", "origin": "b"])
    }

    @Test("all with all-errors waits for every input and lists each failure by index and id")
    func allErrors() {
        let (harness, peer) = setUp(["a", "b", "c"])
        harness.call("all", ["ids": ["a", "b", "c"], "id": "every", "policy": "all-errors"], from: peer)
        harness.call("reject", ["id": "a", "reason": ["code": 1, "message": "a broke"]], from: peer)
        #expect(harness.state("every", from: peer) == "pending")
        harness.call("resolve", ["id": "b"], from: peer)
        harness.call("reject", ["id": "c", "reason": "c broke"], from: peer)
        let reason = harness.record("every", from: peer)["reason"]
        #expect(reason?["message"] == "2 of 3 input promises were rejected")
        #expect(reason?["data"]?["errors"] == [
            ["index": 0, "id": "a", "reason": ["code": 1, "message": "a broke", "origin": "a"]],
            ["index": 2, "id": "c", "reason": ["message": "c broke", "origin": "c"]],
        ])
    }

    @Test("all with ignore-errors fulfils with the fulfilled values only")
    func ignoreErrors() {
        let (harness, peer) = setUp(["a", "b", "c"])
        harness.call("all", ["ids": ["a", "b", "c"], "id": "some", "policy": "ignore-errors"], from: peer)
        harness.call("resolve", ["id": "a", "value": "A"], from: peer)
        harness.call("reject", ["id": "b", "reason": "no"], from: peer)
        harness.call("resolve", ["id": "c", "value": "C"], from: peer)
        #expect(harness.record("some", from: peer)["value"] == ["A", "C"])
    }

    @Test("all with nulls fulfils with null in place of each rejection")
    func nulls() {
        let (harness, peer) = setUp(["a", "b"])
        harness.call("all", ["ids": ["a", "b"], "id": "holes", "policy": "nulls"], from: peer)
        harness.call("reject", ["id": "a", "reason": "no"], from: peer)
        harness.call("resolve", ["id": "b", "value": "B"], from: peer)
        #expect(harness.record("holes", from: peer)["value"] == [nil, "B"])
    }

    @Test("all of no ids fulfils with an empty array at once")
    func allEmpty() {
        let (harness, peer) = setUp([])
        #expect(harness.call("all", ["ids": []], from: peer)["value"] == [])
    }

    @Test("any fulfils with the first fulfilment; rejects listing every failure when all fail")
    func any() {
        let (harness, peer) = setUp(["a", "b", "c", "d"])
        harness.call("any", ["ids": ["a", "b"], "id": "first"], from: peer)
        harness.call("reject", ["id": "a", "reason": "no"], from: peer)
        harness.call("resolve", ["id": "b", "value": "B"], from: peer)
        #expect(harness.record("first", from: peer)["value"] == "B")
        harness.call("any", ["ids": ["c", "d"], "id": "none"], from: peer)
        harness.call("reject", ["id": "c", "reason": "c"], from: peer)
        harness.call("reject", ["id": "d", "reason": "d"], from: peer)
        let reason = harness.record("none", from: peer)["reason"]
        #expect(reason?["data"]?["errors"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["c", "d"])
    }

    @Test("race settles as the first input to settle, rejection included")
    func race() {
        let (harness, peer) = setUp(["a", "b"])
        harness.call("race", ["ids": ["a", "b"], "id": "r"], from: peer)
        harness.call("reject", ["id": "b", "reason": "fast failure"], from: peer)
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        #expect(harness.record("r", from: peer)["reason"] == ["message": "fast failure", "origin": "b"])
    }

    @Test("any and race of no ids are rejected at once", arguments: ["any", "race"])
    func emptyAnyRace(method: String) {
        let (harness, peer) = setUp([])
        let record = harness.call(method, ["ids": []], from: peer)
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["message"] == "no input promises")
    }

    @Test("allSettled fulfils, once all settle, with each input's id, state and value or reason")
    func allSettled() {
        let (harness, peer) = setUp(["a", "b", "c"])
        harness.call("allSettled", ["ids": ["a", "b", "c"], "id": "done"], from: peer)
        harness.call("then", ["id": "c", "childId": "keep"], from: peer)   // so cancelling c stays local
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        harness.call("reject", ["id": "b", "reason": "no"], from: peer)
        #expect(harness.state("done", from: peer) == "pending")
        harness.call("cancel", ["id": "c"], from: peer)
        #expect(harness.record("done", from: peer)["value"] == [
            ["id": "a", "state": "fulfilled", "value": 1],
            ["id": "b", "state": "rejected", "reason": ["message": "no", "origin": "b"]],
            ["id": "c", "state": "cancelled", "reason": ["message": "cancelled"]],
        ])
    }

    @Test("an input named several times gives its value at each position it is named, under every all policy",
          arguments: ["fail-fast", "nulls", "ignore-errors", "all-errors"])
    func repeatedInputValues(policy: String) {
        let (harness, peer) = setUp(["a", "b"])
        harness.call("all", ["ids": ["a", "b", "a", "a"], "id": "many", "policy": .string(policy)], from: peer)
        harness.call("resolve", ["id": "a", "value": "A"], from: peer)
        #expect(harness.state("many", from: peer) == "pending")
        harness.call("resolve", ["id": "b", "value": "B"], from: peer)
        #expect(harness.record("many", from: peer)["value"] == ["A", "B", "A", "A"])
    }

    @Test("a rejected input named several times counts at each of its positions")
    func repeatedInputFailures() {
        let (harness, peer) = setUp(["a", "b", "c"])
        harness.call("all", ["ids": ["a", "b", "a", "c"], "id": "every", "policy": "all-errors"], from: peer)
        harness.call("all", ["ids": ["a", "b", "a", "c"], "id": "some", "policy": "ignore-errors"], from: peer)
        harness.call("all", ["ids": ["a", "b", "a", "c"], "id": "holes", "policy": "nulls"], from: peer)
        harness.call("allSettled", ["ids": ["b", "a", "b"], "id": "done"], from: peer)
        harness.call("any", ["ids": ["b", "b"], "id": "none"], from: peer)
        harness.call("reject", ["id": "b", "reason": "b broke"], from: peer)
        harness.call("resolve", ["id": "a", "value": "A"], from: peer)
        harness.call("reject", ["id": "c", "reason": "c broke"], from: peer)

        let reason = harness.record("every", from: peer)["reason"]
        #expect(reason?["message"] == "2 of 4 input promises were rejected")
        #expect(reason?["data"]?["errors"] == [
            ["index": 1, "id": "b", "reason": ["message": "b broke", "origin": "b"]],
            ["index": 3, "id": "c", "reason": ["message": "c broke", "origin": "c"]],
        ])
        #expect(harness.record("some", from: peer)["value"] == ["A", "A"])
        #expect(harness.record("holes", from: peer)["value"] == ["A", nil, "A", nil])
        #expect(harness.record("done", from: peer)["value"] == [
            ["id": "b", "state": "rejected", "reason": ["message": "b broke", "origin": "b"]],
            ["id": "a", "state": "fulfilled", "value": "A"],
            ["id": "b", "state": "rejected", "reason": ["message": "b broke", "origin": "b"]],
        ])
        let anyReason = harness.record("none", from: peer)["reason"]
        #expect(anyReason?["message"] == "2 of 2 input promises were rejected")
        #expect(anyReason?["data"]?["errors"]?.arrayValue?.compactMap { $0["index"]?.intValue } == [0, 1])
    }

    @Test("cancelling a combinator over one input named many times cancels that input once, alone")
    func cancellingRepeatedInput() {
        let (harness, peer) = setUp(["a", "kept"])
        harness.call("all", ["ids": .array(Array(repeating: "a", count: 1_000)), "id": "many"], from: peer)
        harness.call("race", ["ids": ["kept", "kept", "kept"], "id": "racing"], from: peer)
        harness.call("then", ["id": "kept", "childId": "other"], from: peer)
        harness.call("cancel", ["id": "many"], from: peer)
        harness.call("cancel", ["id": "racing"], from: peer)
        #expect(harness.state("many", from: peer) == "cancelled")
        #expect(harness.state("a", from: peer) == "cancelled")
        #expect(harness.state("racing", from: peer) == "cancelled")
        #expect(harness.state("kept", from: peer) == "pending", "its other child still wants it")
    }

    @Test("combinators check their params and inputs",
          arguments: ["all", "any", "race", "allSettled"])
    func invalidParams(method: String) {
        let (harness, peer) = setUp(["a"])
        #expect(harness.errorCode(method, [:], from: peer) == -32602)
        #expect(harness.errorCode(method, ["ids": "a"], from: peer) == -32602)
        #expect(harness.errorCode(method, ["ids": ["a", 2]], from: peer) == -32602)
        let missing = harness.answer(method, ["ids": ["a", "ghost"]], from: peer)
        #expect(missing["error"]?["code"] == -32001)
        #expect(missing["error"]?["data"]?["id"] == "ghost")
        #expect(harness.errorCode(method, ["ids": ["a"], "id": "a"], from: peer) == -32006)
        #expect(harness.registry.count == 1)
    }

    @Test("all rejects an unknown policy with -32602")
    func unknownPolicy() {
        let (harness, peer) = setUp(["a"])
        let message = harness.answer("all", ["ids": ["a"], "policy": "some"], from: peer)
        #expect(message["error"]?["code"] == -32602)
        #expect(message["error"]?["data"]?["param"] == "policy")
    }

    @Test("cancelling a combinator cancels inputs it was the only consumer of")
    func cancelCombinator() {
        let (harness, peer) = setUp(["a", "b"])
        harness.call("then", ["id": "b", "childId": "other"], from: peer)
        harness.call("all", ["ids": ["a", "b"], "id": "both"], from: peer)
        harness.call("cancel", ["id": "both"], from: peer)
        #expect(harness.state("a", from: peer) == "cancelled")
        #expect(harness.state("b", from: peer) == "pending")
    }

    @Test("a combinator can be waited for and chained like any promise")
    func chainCombinator() {
        let (harness, peer) = setUp(["a", "b"])
        harness.call("race", ["ids": ["a", "b"], "id": "r"], from: peer)
        harness.call("then", ["id": "r", "childId": "after"], from: peer)
        let waitID = harness.request("wait", ["id": "after"], from: peer)
        harness.call("resolve", ["id": "a", "value": "won"], from: peer)
        #expect(peer.messages.first { $0["id"] == .int(waitID) }?["result"]?["value"] == "won")
    }
}
