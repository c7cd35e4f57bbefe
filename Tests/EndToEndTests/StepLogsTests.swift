import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// `promisectl logs`: the output of `then … exec` and `promisectl run` steps,
/// kept by the daemon, cut from the front past `--max-log-bytes`, durable,
/// and followed while a step runs.
@Suite("Step logs")
struct StepLogsTests {
    /// Makes parent "p" with an exec child `child` running `script`, resolves
    /// the parent and waits for the child to settle.
    private func runStep(_ script: String, child: String, on daemon: E2EDaemon) throws -> BlockingPromiseClient.Record {
        let client = try daemon.client()
        try client.call("create", ["id": .string(child + "/parent")])
        try client.call("then", ["id": .string(child + "/parent"), "childId": .string(child), "exec": ["sh", "-c", .string(script)]])
        try client.call("resolve", ["id": .string(child + "/parent"), "value": 1])
        return try E2E.record(client.call("wait", ["id": .string(child), "timeoutMs": 10_000]))
    }

    @Test("logs prints an exec step's stdout to stdout and its stderr to stderr, after success and after failure")
    func execStepAfterSuccessAndFailure() throws {
        try E2EDaemon.with { daemon in
            let good = try runStep("echo built; echo 'warning: slow' >&2; echo 42", child: "good", on: daemon)
            #expect(good.state == .fulfilled)
            let goodLogs = try daemon.ctl("logs", "good")
            #expect(goodLogs.status == 0)
            #expect(goodLogs.stdout == "built\n42\n")
            #expect(goodLogs.stderr == "warning: slow\n")

            let bad = try runStep("echo compiling; echo 'error: no such file' >&2; exit 2", child: "bad", on: daemon)
            #expect(bad.state == .rejected)
            let badLogs = try daemon.ctl("logs", "bad")
            #expect(badLogs.status == 1)
            #expect(badLogs.stdout == "compiling\n")
            #expect(badLogs.stderr == "error: no such file\n")

            #expect(try daemon.ctl("logs", "missing").status == 4)
        }
    }

    @Test("--timeout and --reconnect-timeout without --follow are usage errors that say so")
    func followOnlyOptions() throws {
        try E2EDaemon.with { daemon in
            for (option, value) in [("--timeout", "5"), ("--reconnect-timeout", "5")] {
                let refused = try daemon.ctl("logs", "x", option, value)
                #expect(refused.status == 64, "\(refused)")
                #expect(refused.stderr.contains("\(option) needs --follow"), "\(refused)")
            }
        }
    }

    @Test("output over --max-log-bytes is cut from the front, and logs says so on stderr")
    func cutFromFrontWithNote() throws {
        try E2EDaemon.with(extraArguments: ["--max-log-bytes", "10"]) { daemon in
            _ = try runStep("printf 'abcdefghij0123456789'; printf 'short' >&2", child: "long", on: daemon)
            let logs = try daemon.ctl("logs", "long")
            #expect(logs.status == 0)
            #expect(logs.stdout == "0123456789")
            #expect(logs.stderr.contains("stdout of long: the first 10 bytes were cut"))
            #expect(logs.stderr.contains("promised --max-log-bytes"))
            #expect(logs.stderr.hasSuffix("short"))
            #expect(!logs.stderr.contains("stderr of long"))
            let answer = try daemon.client().call("logs", ["id": "long"])
            #expect(answer["stdoutDropped"] == 10)
            #expect(answer["truncated"] == ["stdout": true, "stderr": false])
            #expect(try daemon.client().call("info")["limits"]?["maxLogBytes"] == 10)
        }
    }

    @Test("promised refuses a --max-log-bytes whose logs answer would not fit in a client's output buffer")
    func maxLogBytesBounded() throws {
        let tooLarge = try E2ECommand.run(E2EBinaries.promised, ["--in-memory", "--max-log-bytes", "1000000"])
        #expect(tooLarge.status == 64)
        #expect(tooLarge.stderr.contains("--max-log-bytes is too large for --max-output-buffer-bytes 8388608"))
        let negative = try E2ECommand.run(E2EBinaries.promised, ["--in-memory", "--max-log-bytes", "-1"])
        #expect(negative.status == 64)
        // Without the flag, a small output buffer lowers the default.
        try E2EDaemon.with(extraArguments: ["--max-output-buffer-bytes", "131072"]) { daemon in
            let limits = try daemon.client().call("info")["limits"]
            #expect(limits?["maxLogBytes"] == .int((131_072 - 2_048) / 12))
        }
    }

    @Test("a run step's output still passes through, and logs prints it afterwards")
    func runStep() throws {
        try E2EDaemon.with { daemon in
            let run = try daemon.ctl("run", "r", "--", "sh", "-c", "echo out one; echo err one >&2; echo out two")
            #expect(run.status == 0)
            #expect(run.stdout == "out one\nout two\n")
            #expect(run.stderr == "err one\n")
            let logs = try daemon.ctl("logs", "r")
            #expect(logs.status == 0)
            #expect(logs.stdout == "out one\nout two\n")
            #expect(logs.stderr == "err one\n")

            let failed = try daemon.ctl("run", "rf", "--", "sh", "-c", "echo partial; echo broken >&2; exit 3")
            #expect(failed.status == 3)
            let failedLogs = try daemon.ctl("logs", "rf")
            #expect(failedLogs.status == 1)
            #expect(failedLogs.stdout == "partial\n")
            #expect(failedLogs.stderr == "broken\n")
        }
    }

    @Test("logs survive a restart of a durable daemon, and are dropped with the promise by forget")
    func durableAcrossRestart() throws {
        let daemon = try E2EDurableDaemon.started()
        defer { daemon.remove() }
        let client = try daemon.client()
        try client.call("create", ["id": "p"])
        try client.call("then", ["id": "p", "childId": "c", "exec": ["sh", "-c", "echo kept; echo also >&2"]])
        try client.call("resolve", ["id": "p", "value": 1])
        _ = try client.call("wait", ["id": "c", "timeoutMs": 10_000])
        let run = try daemon.ctl(["run", "r", "--", "sh", "-c", "echo from run"])
        #expect(run.status == 0)
        client.close()

        #expect(daemon.terminate() == 0)
        try daemon.restart()
        let logs = try daemon.ctl(["logs", "c"])
        #expect(logs.stdout == "kept\n")
        #expect(logs.stderr == "also\n")
        #expect(try daemon.ctl(["logs", "r"]).stdout == "from run\n")

        #expect(try daemon.ctl(["forget", "c"]).status == 0)
        #expect(daemon.terminate() == 0)
        try daemon.restart()
        #expect(try daemon.ctl(["logs", "c"]).status == 4)
    }

    @Test("logs --follow prints lines as a slow step writes them, and exits when it ends")
    func followSlowStep() throws {
        try E2EDaemon.with { daemon in
            let gate = daemon.socketPath + ".gate"
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            let script = "echo first; echo err-first >&2; while [ ! -e '\(gate)' ]; do sleep 0.05; done; echo second; exit 4"
            try client.call("then", ["id": "p", "childId": "slow", "exec": ["sh", "-c", .string(script)]])
            let follow = try daemon.startCtl("logs", "--follow", "slow")
            try client.call("resolve", ["id": "p", "value": 1])
            // The first line comes while the step is still running (it waits for the gate).
            #expect(E2E.eventually(timeout: .seconds(10)) { follow.stdoutSoFar == "first\n" })
            #expect(try E2E.record(client.call("get", ["id": "slow"])).state == .pending)
            #expect(follow.process.isRunning)
            _ = FileManager.default.createFile(atPath: gate, contents: nil)
            defer { try? FileManager.default.removeItem(atPath: gate) }
            let result = try follow.finish(timeout: .seconds(10))
            #expect(result.stdout == "first\nsecond\n")
            #expect(result.stderr == "err-first\n")
            #expect(result.status == 1)
        }
    }

    @Test("logs --follow of a run step shows its output as it runs")
    func followRunStep() throws {
        try E2EDaemon.with { daemon in
            let gate = daemon.socketPath + ".rungate"
            try daemon.client().call("create", ["id": "r"])
            let follow = try daemon.startCtl("logs", "--follow", "r")
            let script = "echo step one; while [ ! -e '\(gate)' ]; do sleep 0.05; done; echo step two"
            let run = try daemon.startCtl("run", "r", "--", "sh", "-c", script)
            #expect(E2E.eventually(timeout: .seconds(10)) { follow.stdoutSoFar == "step one\n" })
            _ = FileManager.default.createFile(atPath: gate, contents: nil)
            defer { try? FileManager.default.removeItem(atPath: gate) }
            #expect(try run.finish(timeout: .seconds(10)).status == 0)
            let result = try follow.finish(timeout: .seconds(10))
            #expect(result.stdout == "step one\nstep two\n")
            #expect(result.status == 0)
        }
    }
    /// Waits until `daemon` serves `count` connections besides the one asking.
    private func waitForConnections(_ daemon: E2EDaemon, _ count: Int) throws -> Bool {
        let client = try daemon.client()
        defer { client.close() }
        return try E2E.eventually(timeout: .seconds(10)) { (try client.call("info")["connections"]?.intValue ?? 0) >= count + 1 }
    }

    @Test("logs --follow started before its id exists waits for it, then prints what the run step writes and exits as it ended")
    func followWaitsForCreation() throws {
        try E2EDaemon.with { daemon in
            let follow = try daemon.startCtl("logs", "--follow", "late/run")
            #expect(try waitForConnections(daemon, 1), "logs --follow did not attach")
            Thread.sleep(forTimeInterval: 0.3)  // it has looked for the id more than once by now
            #expect(follow.process.isRunning, "logs --follow ended before the id existed: \(follow.stderrSoFar)")

            let script = "echo one; echo warn >&2; sleep 0.4; echo two; exit 3"
            let run = try daemon.ctl("run", "late/run", "--", "sh", "-c", script)
            #expect(run.status == 3, "\(run)")
            let result = try follow.finish(timeout: .seconds(10))
            #expect(result.status == 1, "\(result)")
            #expect(result.stdout == "one\ntwo\n")
            #expect(result.stderr == "warn\n")
        }
    }

    @Test("logs --follow waiting for an id that is created and settled between two of its looks prints its log and exits 0")
    func followCatchesAStepSettledBetweenLooks() throws {
        try E2EDaemon.with { daemon in
            let follow = try daemon.startCtl("logs", "--follow", "late/quick")
            #expect(try waitForConnections(daemon, 1), "logs --follow did not attach")
            Thread.sleep(forTimeInterval: 0.5)  // its looks are 250 ms apart by now
            #expect(follow.process.isRunning, "logs --follow ended before the id existed: \(follow.stderrSoFar)")
            let client = try daemon.client()
            let results = try client.batch([
                .init("create", ["id": "late/quick"]),
                .init("log", ["id": "late/quick", "stream": "stdout", "data": "hello\n"]),
                .init("resolve", ["id": "late/quick", "value": 7]),
            ])
            for result in results { _ = try result.get() }
            let result = try follow.finish(timeout: .seconds(10))
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "hello\n")
            #expect(result.stderr == "")
        }
    }

    @Test("logs --follow of an id created, settled and forgotten before it could look exits 4; plain logs of a missing id still exits 4 at once")
    func followOfAForgottenIDExits4() throws {
        try E2EDaemon.with { daemon in
            let follow = try daemon.startCtl("logs", "--follow", "late/gone")
            #expect(try waitForConnections(daemon, 1), "logs --follow did not attach")
            Thread.sleep(forTimeInterval: 0.5)
            #expect(follow.process.isRunning, "logs --follow ended before the id existed: \(follow.stderrSoFar)")
            let client = try daemon.client()
            let results = try client.batch([
                .init("create", ["id": "late/gone"]),
                .init("resolve", ["id": "late/gone", "value": 1]),
                .init("forget", ["ids": ["late/gone"]]),
            ])
            for result in results { _ = try result.get() }
            let result = try follow.finish(timeout: .seconds(10))
            #expect(result.status == 4, "\(result)")
            #expect(result.stdout == "")

            let plain = try daemon.ctl("logs", "never/made")
            #expect(plain.status == 4, "\(plain)")
        }
    }
    @Test("logs --follow --timeout gives up with exit 3, on a step that goes on and on an id never made; what came before is printed")
    func followTimeoutExits3() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "slow/step"])
            try client.call("log", ["id": "slow/step", "stream": "stdout", "data": "started\n"])

            let started = ContinuousClock.now
            let running = try daemon.ctl("logs", "--follow", "slow/step", "--timeout", "0.3")
            #expect(running.status == 3, "\(running)")
            #expect(running.stdout == "started\n")
            #expect(running.stderr == "promisectl: timed out following slow/step\n")
            #expect(ContinuousClock.now - started >= .milliseconds(300))

            let missing = try daemon.ctl("logs", "--follow", "never/made", "--timeout", "0.3")
            #expect(missing.status == 3, "\(missing)")
            #expect(missing.stderr == "promisectl: timed out following never/made\n")

            // Settled before the deadline: how it ended, as without --timeout.
            try client.call("resolve", ["id": "slow/step", "value": 1])
            let settled = try daemon.ctl("logs", "--follow", "slow/step", "--timeout", "5")
            #expect(settled.status == 0, "\(settled)")
        }
    }

    @Test("logs --timeout without --follow, or not a number of seconds, is a usage error")
    func timeoutNeedsFollow() throws {
        try E2EDaemon.with { daemon in
            for arguments in [["logs", "a", "--timeout", "1"], ["logs", "a", "--follow", "--timeout", "-1"]] {
                let result = try daemon.ctl(arguments)
                #expect(result.status == 64, "\(arguments): \(result)")
            }
        }
    }
}
