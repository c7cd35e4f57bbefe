import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseDispatch
import PromiseRegistry
import PromiseTestSupport
import Testing

@Suite("Registry: then … exec")
struct RegistryExecTests {
    /// A harness with a pending parent "a" and an exec child "job" of it.
    private func setUp(on: String = "fulfilled", limits: DaemonLimits = DaemonLimits())
        -> (RPCHarness, RPCFakePeer)
    {
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call(
            "then",
            ["id": "a", "childId": "job", "on": .string(on), "exec": ["make", "lib"], "cwd": "/src",
             "env": ["MODE": "fast"]],
            from: peer)
        return (harness, peer)
    }

    @Test("the command starts when the parent fulfils, with the value as JSON on stdin")
    func startsOnFulfil() throws {
        let (harness, peer) = setUp()
        #expect(harness.loop.processes.isEmpty)
        harness.call("resolve", ["id": "a", "value": ["target": "lib"]], from: peer)
        let process = try #require(harness.loop.processes.first)
        #expect(process.spec.argv == ["make", "lib"])
        #expect(process.spec.cwd == "/src")
        #expect(process.spec.env["MODE"] == "fast")
        #expect(process.spec.env["PROMISE_ID"] == "a")
        #expect(process.spec.env["PROMISE_CHILD_ID"] == "job")
        #expect(process.spec.env["PROMISE_STATE"] == "fulfilled")
        #expect(process.spec.outputLimit == harness.limits.maxProcessOutputBytes)
        #expect(String(decoding: process.spec.stdin, as: UTF8.self) == #"{"target":"lib"}"# + "\n")
        #expect(harness.state("job", from: peer) == "pending")
        #expect(harness.call("info", from: peer)["runningProcesses"] == 1)
    }

    @Test("exit 0 fulfils with stdout parsed as JSON when it parses")
    func stdoutJSON() throws {
        let (harness, peer) = setUp()
        harness.call("resolve", ["id": "a"], from: peer)
        try #require(harness.loop.processes.first).exit(0, stdout: #"{"ok":true,"n":[1,2]}"# + "\n")
        let record = harness.record("job", from: peer)
        #expect(record["state"] == "fulfilled")
        #expect(record["value"] == ["ok": true, "n": [1, 2]])
        #expect(harness.call("info", from: peer)["runningProcesses"] == 0)
    }

    @Test("exit 0 fulfils with stdout as a string, final newline removed, when it is not JSON",
          arguments: [("built lib\n", "built lib"), ("two\nlines\r\n", "two\nlines"), ("", ""), ("no newline", "no newline")])
    func stdoutText(stdout: String, value: String) throws {
        let (harness, peer) = setUp()
        harness.call("resolve", ["id": "a"], from: peer)
        try #require(harness.loop.processes.first).exit(0, stdout: stdout)
        #expect(harness.record("job", from: peer)["value"] == .string(value))
    }

    @Test("stdout over maxProcessOutputBytes rejects the child although the command exited 0, naming the limit and its flag")
    func truncatedStdout() throws {
        var limits = DaemonLimits()
        limits.maxProcessOutputBytes = 5
        let (harness, peer) = setUp(limits: limits)
        harness.call("resolve", ["id": "a"], from: peer)
        // "12345" cut from "123456" still parses: it must not become the value.
        try #require(harness.loop.processes.first).exit(0, stdout: "12345", stdoutTruncated: true)
        let record = harness.record("job", from: peer)
        #expect(record["state"] == "rejected")
        #expect(record["reason"] == [
            "code": -32004,
            "message": """
                stdout was larger than 5 bytes (the daemon's maxProcessOutputBytes; promised \
                --max-process-output-bytes sets it); write large output to a file and print its path
                """,
            "data": ["limit": "maxProcessOutputBytes", "value": 5], "origin": "job",
        ])
    }

    @Test("a non-zero exit rejects with the status as code and the end of stderr as message")
    func failure() throws {
        let (harness, peer) = setUp()
        harness.call("resolve", ["id": "a"], from: peer)
        try #require(harness.loop.processes.first).exit(2, stderr: "warning: x\nerror: no rule to make lib\n")
        let record = harness.record("job", from: peer)
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["code"] == 2)
        #expect(record["reason"]?["message"] == "warning: x\nerror: no rule to make lib")
        #expect(record["reason"]?["data"]?["exitStatus"] == 2)
    }

    @Test("a non-zero exit with an empty stderr, or a signal, still explains itself")
    func failureWithoutStderr() throws {
        let (harness, peer) = setUp()
        harness.call("create", ["id": "b"], from: peer)
        harness.call("then", ["id": "b", "childId": "killed", "exec": ["sleep", "9"]], from: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "b"], from: peer)
        try #require(harness.loop.processes.first).exit(3)
        try #require(harness.loop.processes.last).exit(137, signal: 9)
        #expect(harness.record("job", from: peer)["reason"]?["message"] == "exited with status 3")
        let killed = harness.record("killed", from: peer)["reason"]
        #expect(killed?["message"] == "killed by signal 9")
        #expect(killed?["code"] == 137)
        #expect(killed?["data"]?["signal"] == 9)
    }

    @Test("a command that cannot start rejects the child with code 127")
    func launchFailure() {
        let (harness, peer) = setUp()
        harness.loop.launchError = RPCFakeLoop.LaunchFailure()
        harness.call("resolve", ["id": "a"], from: peer)
        let record = harness.record("job", from: peer)
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["code"] == 127)
        #expect(record["reason"]?["message"]?.stringValue?.contains("make") == true)
        #expect(harness.call("info", from: peer)["runningProcesses"] == 0)
    }

    @Test("on fulfilled: a rejected parent runs nothing and the child takes its rejection")
    func fulfilledSkipsRejection() {
        let (harness, peer) = setUp(on: "fulfilled")
        harness.call("reject", ["id": "a", "reason": "upstream"], from: peer)
        #expect(harness.loop.processes.isEmpty)
        #expect(harness.record("job", from: peer)["reason"] == ["message": "upstream", "origin": "a"])
    }

    @Test("on rejected: the command runs with the reason on stdin when the parent is rejected")
    func rejectedRuns() throws {
        let (harness, peer) = setUp(on: "rejected")
        harness.call("reject", ["id": "a", "reason": ["code": 4, "message": "bad"]], from: peer)
        let process = try #require(harness.loop.processes.first)
        #expect(try JSONValue(parsing: process.spec.stdin) == ["code": 4, "message": "bad", "origin": "a"])
        #expect(process.spec.env["PROMISE_STATE"] == "rejected")
        process.exit(0, stdout: "\"recovered\"")
        #expect(harness.record("job", from: peer)["value"] == "recovered")
    }

    @Test("on rejected: a fulfilled parent runs nothing and the child takes its value")
    func rejectedSkipsFulfilment() {
        let (harness, peer) = setUp(on: "rejected")
        harness.call("resolve", ["id": "a", "value": 7], from: peer)
        #expect(harness.loop.processes.isEmpty)
        #expect(harness.record("job", from: peer)["value"] == 7)
    }

    @Test("on settled: the command runs either way, told which by PROMISE_STATE",
          arguments: [("resolve", "fulfilled"), ("reject", "rejected")])
    func settledRuns(method: String, state: String) throws {
        let (harness, peer) = setUp(on: "settled")
        harness.call(method, ["id": "a", "value": 1, "reason": "r"], from: peer)
        let process = try #require(harness.loop.processes.first)
        #expect(process.spec.env["PROMISE_STATE"] == .some(state))
        let stdin = try JSONValue(parsing: process.spec.stdin)
        #expect(stdin == (state == "fulfilled" ? 1 : ["message": "r", "origin": "a"]))
        process.exit(1, stderr: "cleanup failed")
        #expect(harness.record("job", from: peer)["reason"]?["message"] == "cleanup failed")
    }

    @Test("a cancelled parent runs no command, whatever `on` says",
          arguments: ["fulfilled", "rejected", "settled"])
    func cancelledParentRunsNothing(on: String) {
        let (harness, peer) = setUp(on: on)
        harness.call("cancel", ["id": "a"], from: peer)
        #expect(harness.loop.processes.isEmpty)
        #expect(harness.state("job", from: peer) == "cancelled")
    }

    @Test("cancelling an exec child whose command runs terminates the process with the grace period")
    func cancelRunning() throws {
        var limits = DaemonLimits()
        limits.killGraceMilliseconds = 1234
        let (harness, peer) = setUp(limits: limits)
        harness.call("resolve", ["id": "a"], from: peer)
        let process = try #require(harness.loop.processes.first)
        let record = harness.call("cancel", ["id": "job"], from: peer)
        #expect(record["state"] == "cancelled")
        #expect(process.terminations == [1234])
        process.exit(143, signal: 15)
        #expect(harness.state("job", from: peer) == "cancelled")
        #expect(harness.call("info", from: peer)["runningProcesses"] == 0)
    }

    @Test("cancelling an exec child before its parent settles means its command never runs")
    func cancelBeforeStart() {
        let (harness, peer) = setUp()
        harness.call("then", ["id": "a", "childId": "keep"], from: peer)   // keeps "a" alive
        harness.call("cancel", ["id": "job"], from: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(harness.loop.processes.isEmpty)
        #expect(harness.state("job", from: peer) == "cancelled")
    }

    @Test("an exec child settled by a client before its parent runs no command")
    func resolvedBeforeStart() {
        let (harness, peer) = setUp()
        harness.call("resolve", ["id": "job", "value": "manual"], from: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(harness.loop.processes.isEmpty)
        #expect(harness.record("job", from: peer)["value"] == "manual")
    }

    @Test("an exec child of an already fulfilled parent starts its command at once")
    func childOfSettledParent() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "a", "value": "v"], from: peer)
        let record = harness.call("then", ["id": "a", "childId": "job", "exec": ["cat"]], from: peer)
        #expect(record["state"] == "pending")
        let process = try #require(harness.loop.processes.first)
        #expect(process.spec.stdin == Array("\"v\"\n".utf8))
        process.exit(0, stdout: "\"v\"\n")
        #expect(harness.record("job", from: peer)["value"] == "v")
        // The child is registered after the command started: cancelling it still stops the process.
        harness.call("then", ["id": "a", "childId": "job2", "exec": ["sleep", "1"]], from: peer)
        harness.call("cancel", ["id": "job2"], from: peer)
        #expect(harness.loop.processes.last?.terminations.count == 1)
    }

    @Test("an exec child of an exec child gets the first command's output on stdin")
    func chainOfCommands() throws {
        let (harness, peer) = setUp()
        harness.call("then", ["id": "job", "childId": "next", "exec": ["wc", "-c"]], from: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        try #require(harness.loop.processes.first).exit(0, stdout: "built\n")
        let second = try #require(harness.loop.processes.last)
        #expect(second.spec.argv == ["wc", "-c"])
        #expect(String(decoding: second.spec.stdin, as: UTF8.self) == "\"built\"\n")
        second.exit(0, stdout: "8\n")
        #expect(harness.record("next", from: peer)["value"] == 8)
    }

    @Test("the exec child's record shows its command and `on`")
    func recordShowsCommand() {
        let (harness, peer) = setUp(on: "settled")
        let record = harness.record("job", from: peer)
        #expect(record["exec"] == ["make", "lib"])
        #expect(record["on"] == "settled")
        #expect(record["parent"] == "a")
    }
}
