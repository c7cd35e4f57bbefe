@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// A reason names where its rejection began (`origin`), and keeps naming it
/// as it is passed on through `then` children and combinators.
@Suite("Registry: where a failure began")
struct RegistryFailureOriginTests {
    /// A build: `src` fulfilled, two compile steps `cc/f07` and `cc/f08` run
    /// by the daemon, `link` = all of them, `test` after `link`.
    private func build(policy: String = "fail-fast") -> (RPCHarness, RPCFakePeer) {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "src"], from: peer)
        for step in ["cc/f07", "cc/f08"] {
            harness.call("then", ["id": "src", "childId": .string(step), "exec": ["cc", "-c"]], from: peer)
        }
        harness.call("all", ["ids": ["cc/f07", "cc/f08"], "id": "link", "policy": .string(policy)], from: peer)
        harness.call("then", ["id": "link", "childId": "test"], from: peer)
        harness.call("resolve", ["id": "src", "value": 1], from: peer)
        return (harness, peer)
    }

    @Test("a failed exec step is the origin of the reason its then-child and a fail-fast all downstream show, with its stderr")
    func execFailureNamesTheStepDownstream() throws {
        let (harness, peer) = build()
        try #require(harness.loop.processes.count == 2)
        harness.loop.processes[0].exit(1, stderr: "f07.c:3: error: boom\n")
        let expected: JSONValue = [
            "code": 1, "message": "f07.c:3: error: boom", "data": ["exitStatus": 1], "origin": "cc/f07",
        ]
        #expect(harness.record("cc/f07", from: peer)["reason"] == expected)
        #expect(harness.record("link", from: peer)["reason"] == expected)
        #expect(harness.record("test", from: peer)["reason"] == expected)
    }

    @Test("all-errors names itself as the origin of its reason and lists each failed input with its id and origin")
    func allErrorsListsEachFailure() throws {
        let (harness, peer) = build(policy: "all-errors")
        harness.loop.processes[0].exit(1, stderr: "f07.c:3: error: boom")
        harness.loop.processes[1].exit(2, stderr: "f08.c:9: error: bad")
        let reason = harness.record("test", from: peer)["reason"]
        #expect(reason?["origin"] == "link")
        #expect(reason?["message"] == "2 of 2 input promises were rejected")
        #expect(reason?["data"]?["errors"] == [
            ["index": 0, "id": "cc/f07", "reason": [
                "code": 1, "message": "f07.c:3: error: boom", "data": ["exitStatus": 1], "origin": "cc/f07"]],
            ["index": 1, "id": "cc/f08", "reason": [
                "code": 2, "message": "f08.c:9: error: bad", "data": ["exitStatus": 2], "origin": "cc/f08"]],
        ])
    }

    @Test("an input of all-errors that is a then-child of the failed step lists that step as its reason's origin")
    func allErrorsEntryKeepsDeeperOrigin() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "gen"], from: peer)
        harness.call("then", ["id": "gen", "childId": "use"], from: peer)
        harness.call("create", ["id": "ok"], from: peer)
        harness.call("all", ["ids": ["ok", "use"], "id": "j", "policy": "all-errors"], from: peer)
        harness.call("reject", ["id": "gen", "reason": "generator crashed"], from: peer)
        harness.call("resolve", ["id": "ok"], from: peer)
        #expect(harness.record("j", from: peer)["reason"]?["data"]?["errors"] == [
            ["index": 1, "id": "use", "reason": ["message": "generator crashed", "origin": "gen"]],
        ])
    }

    @Test("reject stamps its own id as origin, whatever origin the client wrote")
    func rejectStampsItsID() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        let record = harness.call("reject", ["id": "a", "reason": ["message": "no", "origin": "elsewhere"]], from: peer)
        #expect(record["reason"] == ["message": "no", "origin": "a"])
    }

    @Test("a timeout is the origin of the rejection its child shows, with the same code and message")
    func timeoutNamesItsPromise() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "slow", "timeoutMs": 50], from: peer)
        harness.call("then", ["id": "slow", "childId": "after"], from: peer)
        harness.loop.advance(by: 50)
        let expected: JSONValue = [
            "code": -32005, "message": "timed out after 50 ms", "data": ["timeoutMs": 50], "origin": "slow",
        ]
        #expect(harness.record("slow", from: peer)["reason"] == expected)
        #expect(harness.record("after", from: peer)["reason"] == expected)
    }

    @Test("a lease that expires is the origin of its rejection")
    func leaseNamesItsPromise() {
        let harness = RPCHarness()
        let holder = harness.connect()
        let other = harness.connect()
        harness.call("create", ["id": "held", "lease": true], from: holder)
        harness.call("then", ["id": "held", "childId": "next"], from: other)
        harness.close(holder)
        #expect(harness.record("next", from: other)["reason"]?["origin"] == "held")
    }

    @Test("any and race of no inputs are rejected naming themselves as origin")
    func emptyCombinatorsNameThemselves() {
        let harness = RPCHarness()
        let peer = harness.connect()
        #expect(harness.call("any", ["ids": [], "id": "none"], from: peer)["reason"]
            == ["message": "no input promises", "origin": "none"])
        #expect(harness.call("race", ["ids": [], "id": "nobody"], from: peer)["reason"]
            == ["message": "no input promises", "origin": "nobody"])
    }

    @Test("a cancellation carries no origin")
    func cancellationHasNoOrigin() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("cancel", ["id": "a"], from: peer)
        #expect(harness.record("a", from: peer)["reason"] == ["message": "cancelled"])
    }

    @Test("the origin survives a restart, on the failed step and on what follows it")
    func originSurvivesRestart() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        first.call("create", ["id": "cc/f07"], from: peer)
        first.call("then", ["id": "cc/f07", "childId": "link"], from: peer)
        first.call("reject", ["id": "cc/f07", "reason": "boom"], from: peer)
        first.settleStore()
        let second = RPCHarness(store: store)
        second.registry.restore(try store.load())
        let other = second.connect()
        #expect(second.record("link", from: other)["reason"] == ["message": "boom", "origin": "cc/f07"])
        second.call("then", ["id": "link", "childId": "test"], from: other)
        #expect(second.record("test", from: other)["reason"] == ["message": "boom", "origin": "cc/f07"])
    }
}
