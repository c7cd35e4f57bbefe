import Foundation
import PromiseClient
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseJSON
#endif

/// Running steps outlive the daemon (docs/DURABILITY.md, "Steps running at
/// a restart"): a `then … exec` command runs under a monitor that keeps its
/// output and writes its outcome in the store folder, so that a kill -9 or a
/// clean stop of the daemon does not fail the step; the next daemon
/// re-attaches to it, or settles it from what its monitor wrote.
@Suite("steps outlive the daemon")
struct StepsOutliveDaemonTests {
    /// Creates "p" and, below it, steps `ids` running `sh -c 'echo ran >> RUNS; sleep 2; echo done'`
    /// (each with its own RUNS file), then resolves "p"; returns once every
    /// step has started and its monitor's pid is stored.
    private func startSleepySteps(_ ids: [String], on daemon: E2EDurableDaemon, script: String = "sleep 2; echo done")
        throws -> [String: String]
    {
        let client = try daemon.client()
        defer { client.close() }
        try client.call("create", ["id": "p"])
        var runs: [String: String] = [:]
        for id in ids {
            let file = daemon.directory + "/runs-" + id
            runs[id] = file
            try client.call("then", [
                "id": "p", "childId": .string(id),
                "exec": ["sh", "-c", .string("echo ran >> \"$1\"; " + script), "sh", .string(file)],
            ])
        }
        try client.call("resolve", ["id": "p", "value": 1])
        #expect(E2E.eventually(timeout: .seconds(10)) { ids.allSatisfy { E2E.lines(ofFile: runs[$0]!) == ["ran"] } },
                "the steps did not start")
        // Each monitor's pid and start time are stored in the commit after the one that marked its step started.
        Thread.sleep(forTimeInterval: 0.5)
        return runs
    }

    /// Waits for `id` to settle and returns its record.
    private func settled(_ id: String, on daemon: E2EDurableDaemon) throws -> BlockingPromiseClient.Record {
        try E2E.record(daemon.call("wait", ["id": .string(id), "timeoutMs": 15_000]))
    }

    /// Expects each step of `runs` to settle fulfilled with "done", exit status 0, its command run once.
    private func expectDoneOnce(_ runs: [String: String], on daemon: E2EDurableDaemon) throws {
        for (id, file) in runs.sorted(by: { $0.key < $1.key }) {
            let record = try settled(id, on: daemon)
            #expect(record.state == .fulfilled, "\(record.json)")
            #expect(record.value == "done")
            #expect(record.json["exitStatus"] == 0)
            #expect(E2E.lines(ofFile: file) == ["ran"], "\(id) ran again")
        }
    }

    @Test("kill -9 of the daemon while 2 steps run: after a restart both are fulfilled with their output, exit 0, each run once")
    func killNineThenRestartSettlesBoth() throws {
        try E2EDurableDaemon.with { daemon in
            let runs = try startSleepySteps(["s1", "s2"], on: daemon)
            daemon.kill9()
            try daemon.start()
            try expectDoneOnce(runs, on: daemon)
            #expect(daemon.log.contains("Re-attached to a step left running by the previous daemon"), "\(daemon.logTail())")
        }
    }

    @Test("SIGTERM of the daemon while 2 steps run leaves them running; after a restart both are fulfilled, each run once")
    func cleanStopLeavesStepsRunning() throws {
        try E2EDurableDaemon.with { daemon in
            let runs = try startSleepySteps(["s1", "s2"], on: daemon)
            let stoppedAt = ContinuousClock.now
            #expect(daemon.terminate(grace: .seconds(5)) == 0, "\(daemon.logTail())")
            #expect(ContinuousClock.now - stoppedAt < .seconds(1.5), "the stop waited for the steps")
            #expect(daemon.log.contains("Left a step running for the next daemon"), "\(daemon.logTail())")
            try daemon.start()
            try expectDoneOnce(runs, on: daemon)
        }
    }

    @Test("with --stop-steps, SIGTERM stops the running steps' commands and rejects them, not run again")
    func stopStepsStopsThem() throws {
        try E2EDurableDaemon.with(extraArguments: ["--stop-steps", "--kill-grace-ms", "500"]) { daemon in
            let runs = try startSleepySteps(["s1", "s2"], on: daemon, script: "echo $$ > \"$1.pid\"; exec sleep 30")
            let pids = try ["s1", "s2"].map { try #require(E2E.pid(fromFile: runs[$0]! + ".pid")) }
            defer { pids.forEach { kill($0, SIGKILL) } }
            #expect(daemon.terminate(grace: .seconds(7)) == 0, "\(daemon.logTail())")
            for pid in pids {
                #expect(E2E.eventually(timeout: .seconds(10)) { !E2E.isAlive(pid) }, "a command outlived --stop-steps")
            }
            try daemon.start()
            for id in ["s1", "s2"] {
                let record = try #require(try daemon.record(id))
                #expect(record.state == .rejected, "\(record.json)")
                #expect(record.reasonMessage == "not run again: its command was running when the daemon stopped")
                #expect(E2E.lines(ofFile: runs[id]!) == ["ran"], "\(id) ran again")
            }
        }
    }

    @Test("a step that ends while no daemon runs is settled at the next start from what its monitor wrote: value, log, exit status")
    func endedWhileDownIsSettledAtStart() throws {
        try E2EDurableDaemon.with { daemon in
            let runs = try startSleepySteps(
                ["ok", "bad"], on: daemon,
                script: "sleep 1; echo \"warning: $1\" >&2; case $1 in *ok) echo '{\"objects\":3}';; *) exit 3;; esac")
            daemon.kill9()
            let steps = daemon.storeDirectory + "/steps"
            #expect(E2E.eventually(timeout: .seconds(10)) {
                (try? FileManager.default.contentsOfDirectory(atPath: steps))?.filter { $0.hasSuffix(".result") }.count == 2
            }, "the monitors wrote no outcome")
            try daemon.start()
            #expect(daemon.log.contains("stepsSettledFromWrittenOutcome=2"), "\(daemon.logTail())")
            let ok = try #require(try daemon.record("ok"))
            #expect(ok.state == .fulfilled, "\(ok.json)")
            #expect(ok.value == ["objects": 3])
            #expect(ok.json["exitStatus"] == 0)
            let bad = try #require(try daemon.record("bad"))
            #expect(bad.state == .rejected, "\(bad.json)")
            #expect(bad.reason?["code"] == 3)
            #expect(bad.reasonMessage == "warning: \(runs["bad"]!)")
            #expect(bad.json["exitStatus"] == 3)
            let logs = try daemon.call("logs", ["id": "ok"])
            #expect(logs["stderr"] == .string("warning: \(runs["ok"]!)\n"))
            #expect(logs["stdout"] == "{\"objects\":3}\n")
            // Once the settlements are stored, the monitors' files go.
            #expect(E2E.eventually(timeout: .seconds(5)) {
                (try? FileManager.default.contentsOfDirectory(atPath: steps))?.isEmpty == true
            }, "the step files were not removed")
        }
    }

    @Test("README's C pipeline finishes with a kill -9 of the daemon in the middle of its compiles, each compile run once")
    func cPipelineSurvivesKillNine() throws {
        try E2EDurableDaemon.with { daemon in
            let dir = daemon.directory
            let files = ["f01", "f02", "f07"]
            for file in files {
                let body = file == "f01"
                    ? "int f02(void); int f07(void);\n#include <stdio.h>\nint main(void) { printf(\"%d\\n\", f02() + f07()); return 0; }\n"
                    : "int \(file)(void) { return \(Int(file.dropFirst())!); }\n"
                #expect(FileManager.default.createFile(atPath: "\(dir)/\(file).c", contents: Data(body.utf8)))
            }
            let client = try daemon.client()
            try client.call("create", ["id": "build/src"])
            for file in files {
                // A compile slow enough for the kill to land while it runs; each notes its run.
                try client.call("then", [
                    "id": "build/src", "childId": .string("build/cc/\(file)"), "cwd": .string(dir),
                    "exec": ["sh", "-c", .string("echo ran >> runs-\(file); sleep 1; cc -c \(file).c -o \(file).o")],
                ])
            }
            try client.call("all", ["ids": ["build/cc/f01", "build/cc/f02", "build/cc/f07"], "id": "build/objs",
                                    "stopOnFailure": true])
            try client.call("then", ["id": "build/objs", "childId": "build/link", "cwd": .string(dir),
                                     "exec": ["cc", "f01.o", "f02.o", "f07.o", "-o", "app"]])
            try client.call("then", ["id": "build/link", "childId": "build/test", "cwd": .string(dir), "exec": ["./app"]])
            try client.call("resolve", ["id": "build/src", "value": true])
            #expect(E2E.eventually(timeout: .seconds(10)) { files.allSatisfy { !E2E.lines(ofFile: "\(dir)/runs-\($0)").isEmpty } })
            Thread.sleep(forTimeInterval: 0.3)
            client.close()
            daemon.kill9()
            try daemon.start()
            let waited = try daemon.ctl(["wait", "build/test", "--timeout", "20"])
            #expect(waited.status == 0, "\(waited)")
            #expect(waited.stdout == "9\n", "\(waited)")
            for file in files {
                #expect(E2E.lines(ofFile: "\(dir)/runs-\(file)") == ["ran"], "\(file) compiled again")
            }
        }
    }

    @Test("a step whose stdout passes the limit while no daemon runs is killed by its monitor and rejected at the next start")
    func outputLimitWhileDown() throws {
        try E2EDurableDaemon.with(extraArguments: ["--max-process-output-bytes", "100"]) { daemon in
            let runs = try startSleepySteps(
                ["big"], on: daemon, script: "sleep 1; echo $$ > \"$1.pid\"; while :; do echo xxxxxxxxxxxxxxxxxxxxxxxx; done")
            daemon.kill9()
            let pid = try #require(E2E.pid(fromFile: runs["big"]! + ".pid"))
            defer { kill(pid, SIGKILL) }
            #expect(E2E.eventually(timeout: .seconds(10)) { !E2E.isAlive(pid) }, "the monitor did not stop the command at the limit")
            try daemon.start()
            let record = try settled("big", on: daemon)
            #expect(record.state == .rejected, "\(record.json)")
            #expect(record.reason?["code"] == -32004)
            #expect(record.reasonMessage?.hasPrefix("stdout was larger than 100 bytes") == true, "\(record.json)")
        }
    }
}
