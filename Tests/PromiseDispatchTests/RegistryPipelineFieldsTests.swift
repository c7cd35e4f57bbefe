import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry
import PromiseTestSupport
import Testing

/// The record fields a pipeline view reads (`pid`, `started`, `exitStatus`,
/// `consumers`): present when they apply, absent otherwise.
@Suite("Registry: pipeline fields of records")
struct RegistryPipelineFieldsTests {
    private func execChild() -> (RPCHarness, RPCFakePeer) {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("then", ["id": "a", "childId": "job", "exec": ["make", "lib"]], from: peer)
        return (harness, peer)
    }

    @Test("an exec child has no pid, started or exitStatus before its command starts; its pid and start while it runs; exitStatus 0 and no pid after exit 0")
    func runningThenExited() throws {
        let (harness, peer) = execChild()
        let waiting = harness.record("job", from: peer)
        #expect(waiting["pid"] == nil && waiting["started"] == nil && waiting["exitStatus"] == nil)
        harness.call("resolve", ["id": "a"], from: peer)
        let running = harness.record("job", from: peer)
        #expect(running["state"] == "pending")
        #expect(running["pid"] == 4242)
        let started = try #require(running["started"]?.intValue)
        #expect(started >= (running["created"]?.intValue ?? .max))
        #expect(running["exitStatus"] == nil)
        try #require(harness.loop.processes.first).exit(0, stdout: "1")
        let done = harness.record("job", from: peer)
        #expect(done["state"] == "fulfilled")
        #expect(done["pid"] == nil)
        #expect(done["exitStatus"] == 0)
        #expect(done["started"]?.intValue == started)
    }

    @Test("a command killed by a signal shows 128 + the signal as exitStatus")
    func killed() throws {
        let (harness, peer) = execChild()
        harness.call("resolve", ["id": "a"], from: peer)
        try #require(harness.loop.processes.first).exit(137, signal: 9)
        #expect(harness.record("job", from: peer)["exitStatus"] == 137)
    }

    @Test("a command that cannot start shows exitStatus 127 and no pid")
    func cannotStart() {
        let (harness, peer) = execChild()
        harness.loop.launchError = RPCFakeLoop.LaunchFailure()
        harness.call("resolve", ["id": "a"], from: peer)
        let record = harness.record("job", from: peer)
        #expect(record["state"] == "rejected")
        #expect(record["exitStatus"] == 127)
        #expect(record["pid"] == nil)
    }

    @Test("consumers lists the combinators a promise is an input of, each once, in creation order; a plain promise has no command fields")
    func consumers() {
        let harness = RPCHarness()
        let peer = harness.connect()
        for id in ["x", "y"] {
            let record = harness.call("create", ["id": .string(id)], from: peer)
            #expect(record["pid"] == nil && record["started"] == nil && record["exitStatus"] == nil && record["consumers"] == nil)
        }
        harness.call("all", ["ids": ["x", "y", "x"], "id": "both"], from: peer)
        harness.call("race", ["ids": ["x"], "id": "first"], from: peer)
        #expect(harness.record("x", from: peer)["consumers"] == ["both", "first"])
        #expect(harness.record("y", from: peer)["consumers"] == ["both"])
        #expect(harness.record("both", from: peer)["consumers"] == nil)
    }
}
