@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// `all` with `stopOnFailure`: once one input fails, the inputs still
/// pending that nothing else consumes are cancelled.
@Suite("Registry: all with stopOnFailure")
struct RegistryStopOnFailureTests {
    /// `src` fulfilled with three compile steps running under it, joined by
    /// `objs` (fail-fast, with `stopOnFailure` as given), and a queued step
    /// `late` (its parent `gate` still pending) as a fourth input.
    private func build(stopOnFailure: Bool?) -> (RPCHarness, RPCFakePeer) {
        var limits = DaemonLimits()
        limits.killGraceMilliseconds = 777
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "src"], from: peer)
        harness.call("create", ["id": "gate"], from: peer)
        for step in ["cc/1", "cc/2", "cc/3"] {
            harness.call("then", ["id": "src", "childId": .string(step), "exec": ["cc"]], from: peer)
        }
        harness.call("then", ["id": "gate", "childId": "late", "exec": ["cc"]], from: peer)
        var params: [String: JSONValue] = ["ids": ["cc/1", "cc/2", "cc/3", "late"], "id": "objs"]
        if let stopOnFailure { params["stopOnFailure"] = .bool(stopOnFailure) }
        harness.call("all", .object(params), from: peer)
        harness.call("resolve", ["id": "src", "value": 1], from: peer)
        return (harness, peer)
    }

    @Test("one failed input cancels the others still pending: running commands are stopped, a queued step never starts")
    func failureStopsTheRest() throws {
        let (harness, peer) = build(stopOnFailure: true)
        try #require(harness.loop.processes.count == 3)
        harness.loop.processes[1].exit(0, stdout: "2")
        harness.loop.processes[0].exit(1, stderr: "1.c:1: error: no")
        #expect(harness.record("objs", from: peer)["reason"]?["origin"] == "cc/1")
        #expect(harness.state("cc/2", from: peer) == "fulfilled")
        #expect(harness.state("cc/3", from: peer) == "cancelled")
        #expect(harness.state("late", from: peer) == "cancelled")
        #expect(harness.loop.processes.map(\.terminations) == [[], [], [777]])
        // The queued step's parent had no other consumer left: the core's rule cancels it too.
        #expect(harness.state("gate", from: peer) == "cancelled")
        harness.call("create", ["id": "unrelated"], from: peer)
        #expect(harness.loop.processes.count == 3)
        #expect(harness.record("objs", from: peer)["stopOnFailure"] == true)
    }

    @Test("without stopOnFailure (the default) the other inputs run on after a failure")
    func defaultKeepsTheRest() throws {
        for flag in [nil, false] as [Bool?] {
            let (harness, peer) = build(stopOnFailure: flag)
            harness.loop.processes[0].exit(1, stderr: "no")
            #expect(harness.state("objs", from: peer) == "rejected")
            #expect(harness.state("cc/3", from: peer) == "pending")
            #expect(harness.state("late", from: peer) == "pending")
            #expect(harness.loop.processes.allSatisfy { $0.terminations.isEmpty })
            #expect(harness.record("objs", from: peer)["stopOnFailure"] == nil)
        }
    }

    @Test("an input another promise still consumes is not cancelled (the counted rule)")
    func sharedInputCarriesOn() throws {
        let (harness, peer) = build(stopOnFailure: true)
        harness.call("then", ["id": "cc/3", "childId": "docs"], from: peer)
        harness.loop.processes[0].exit(1, stderr: "no")
        #expect(harness.state("cc/2", from: peer) == "cancelled")
        #expect(harness.state("cc/3", from: peer) == "pending")
        #expect(harness.loop.processes[2].terminations.isEmpty)
    }

    @Test("cancelling an all with stopOnFailure cancels the inputs it alone consumes, as any all")
    func cancellingTheAll() throws {
        let (harness, peer) = build(stopOnFailure: true)
        harness.call("then", ["id": "cc/3", "childId": "docs"], from: peer)
        harness.call("cancel", ["id": "objs"], from: peer)
        #expect(harness.state("cc/1", from: peer) == "cancelled")
        #expect(harness.state("cc/3", from: peer) == "pending")
    }

    @Test("a fulfilled all with stopOnFailure cancels nothing")
    func successCancelsNothing() throws {
        let (harness, peer) = build(stopOnFailure: true)
        harness.call("resolve", ["id": "gate"], from: peer)
        for process in harness.loop.processes { process.exit(0, stdout: "1") }
        #expect(harness.record("objs", from: peer)["value"] == [1, 1, 1, 1])
        #expect(harness.loop.processes.allSatisfy { $0.terminations.isEmpty })
    }

    @Test("stopOnFailure needs fail-fast, and must be a boolean")
    func badParams() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        for policy in ["all-errors", "ignore-errors", "nulls"] {
            #expect(harness.errorCode(
                "all", ["ids": ["a"], "policy": .string(policy), "stopOnFailure": true], from: peer) == -32602)
        }
        #expect(harness.errorCode("all", ["ids": ["a"], "stopOnFailure": "yes"], from: peer) == -32602)
        #expect(harness.call("all", ["ids": ["a"], "policy": "nulls", "stopOnFailure": false], from: peer)["state"]
            == "pending")
    }

    @Test("stopOnFailure survives a restart: the restored all still stops the rest")
    func survivesRestart() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        for id in ["a", "b"] { first.call("create", ["id": .string(id)], from: peer) }
        first.call("all", ["ids": ["a", "b"], "id": "j", "stopOnFailure": true], from: peer)
        first.settleStore()
        #expect(store["j"]?.stopOnFailure == true)
        let second = RPCHarness(store: store)
        second.registry.restore(try store.load())
        let other = second.connect()
        second.call("reject", ["id": "a", "reason": "no"], from: other)
        #expect(second.state("b", from: other) == "cancelled")
    }
}
