import Foundation
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseJSON
import PromiseClient
#endif

/// `then … --retry N [--retry-delay SEC]`: a step whose command fails, or
/// whose monitor is lost at a restart, runs again, up to N more times.
@Suite("then --retry")
struct StepRetryTests {
    @Test("then --retry 2 of a failing command runs it 3 times, then rejects with its status; the record counts 3 attempts")
    func failingCommandRunsThreeTimes() throws {
        try E2EDaemon.with { daemon in
            let runs = daemon.directory + "/runs"
            #expect(try daemon.ctl("create", "p").status == 0)
            let then = try daemon.ctl(["then", "p", "--id", "r", "--retry", "2", "--",
                                       "sh", "-c", "echo ran >> \"$0\"; echo nope >&2; exit 4", runs])
            #expect(then.status == 0, "\(then)")
            #expect(try daemon.ctl("resolve", "p", "1").status == 0)
            let waited = try daemon.ctl("wait", "r", "--timeout", "20")
            #expect(waited.status == 1, "\(waited)")
            #expect(E2E.lines(ofFile: runs) == ["ran", "ran", "ran"])
            let record = try E2E.record(daemon.client().call("get", ["id": "r"]))
            #expect(record.json["attempts"] == 3)
            #expect(record.json["retry"] == 2)
            #expect(record.reason?["code"] == 4)
            #expect(record.reasonMessage == "nope")
        }
    }

    @Test("then --retry 1 --retry-delay 300ms: a command that fails once fulfils on its second run, at least the delay later")
    func secondRunFulfils() throws {
        try E2EDaemon.with { daemon in
            let runs = daemon.directory + "/runs"
            #expect(try daemon.ctl("create", "p").status == 0)
            #expect(try daemon.ctl(["then", "p", "--id", "r", "--retry", "1", "--retry-delay", "300ms", "--", "sh", "-c",
                                    "date +%s%N >> \"$0\"; [ $(wc -l < \"$0\") -ge 2 ] && echo ok || exit 1", runs]).status == 0)
            #expect(try daemon.ctl("resolve", "p", "1").status == 0)
            let waited = try daemon.ctl("wait", "r", "--timeout", "20")
            #expect(waited.status == 0, "\(waited)")
            #expect(waited.stdout == "\"ok\"\n")
            let times = E2E.lines(ofFile: runs).compactMap { Int($0) }
            #expect(times.count == 2)
            if times.count == 2 { #expect(times[1] - times[0] >= 300_000_000, "the second run did not wait for the delay") }
            let record = try E2E.record(daemon.client().call("get", ["id": "r"]))
            #expect(record.json["attempts"] == 2)
        }
    }

    @Test("a step cancelled while it waits to run again is cancelled at once and gives its slot back")
    func cancelDuringDelay() throws {
        try E2EDaemon.with { daemon in
            let runs = daemon.directory + "/runs"
            #expect(try daemon.ctl("create", "p").status == 0)
            #expect(try daemon.ctl(["then", "p", "--id", "r", "--retry", "3", "--retry-delay", "60s", "--",
                                    "sh", "-c", "echo ran >> \"$0\"; exit 1", runs]).status == 0)
            #expect(try daemon.ctl("resolve", "p", "1").status == 0)
            #expect(E2E.eventually(timeout: .seconds(10)) { E2E.lines(ofFile: runs) == ["ran"] })
            Thread.sleep(forTimeInterval: 0.3)
            #expect(try daemon.ctl("cancel", "r").status == 0)
            let record = try E2E.record(daemon.client().call("wait", ["id": "r", "timeoutMs": 5_000]))
            #expect(record.state == .cancelled)
            let pools = try daemon.client().call("info")["pools"]
            #expect(pools?["default"]?["running"] == 0, "\(String(describing: pools))")
            #expect(E2E.lines(ofFile: runs) == ["ran"])
        }
    }

    @Test("a step with a retry left whose command and monitor died with the daemon runs again after the restart")
    func lostMonitorRunsAgain() throws {
        try E2EDurableDaemon.with { daemon in
            let runs = daemon.directory + "/runs"
            let pidFile = daemon.directory + "/cmd.pid"
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            try client.call("then", [
                "id": "p", "childId": "r", "retry": 1,
                "exec": ["sh", "-c", "echo ran >> \"$0\"; [ $(wc -l < \"$0\") -ge 2 ] && { echo second; exit 0; }; echo $$ > \"$1\"; exec sleep 30",
                         .string(runs), .string(pidFile)],
            ])
            try client.call("resolve", ["id": "p", "value": 1])
            let pid = try #require(E2E.pid(fromFile: pidFile), "the command did not start")
            let monitor = try #require(E2E.parentPID(of: pid))
            Thread.sleep(forTimeInterval: 0.5)
            client.close()
            daemon.kill9()
            kill(monitor, SIGKILL)
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
            #expect(E2E.eventually(timeout: .seconds(5)) { !E2E.isAlive(monitor) && !E2E.isAlive(pid) })
            try daemon.start()
            let record = try E2E.record(daemon.call("wait", ["id": "r", "timeoutMs": 15_000]))
            #expect(record.state == .fulfilled, "\(record.json)")
            #expect(record.value == "second")
            #expect(record.json["attempts"] == 2)
            #expect(E2E.lines(ofFile: runs) == ["ran", "ran"])
        }
    }

    @Test("run --retry 2 of a failing command runs it 3 times, says so, exits with its status and rejects the promise")
    func runRetriesHere() throws {
        try E2EDaemon.with { daemon in
            let runs = daemon.directory + "/runs"
            let result = try daemon.ctl(["run", "--retry", "2", "r", "--", "sh", "-c", "echo ran >> \"$0\"; echo nope >&2; exit 3", runs])
            #expect(result.status == 3, "\(result)")
            #expect(E2E.lines(ofFile: runs) == ["ran", "ran", "ran"])
            #expect(result.stderr.contains("sh failed (status 3); running it again, try 3 of 3"), "\(result)")
            let record = try E2E.record(daemon.client().call("get", ["id": "r"]))
            #expect(record.state == .rejected)
            #expect(record.reason?["code"] == 3)
            #expect(record.reasonMessage == "nope")
        }
    }

    @Test("run --retry 1 of a command that fails once fulfils the promise from its second run and exits 0")
    func runRetrySucceeds() throws {
        try E2EDaemon.with { daemon in
            let runs = daemon.directory + "/runs"
            let result = try daemon.ctl(["run", "--retry", "1", "r", "--", "sh", "-c",
                                         "echo ran >> \"$0\"; [ $(wc -l < \"$0\") -ge 2 ] && echo ok || { echo first; exit 1; }", runs])
            #expect(result.status == 0, "\(result)")
            #expect(E2E.lines(ofFile: runs) == ["ran", "ran"])
            #expect(try E2E.record(daemon.client().call("get", ["id": "r"])).value == "ok")
        }
    }

    @Test("--retry out of range, or without a command, is a usage error; the daemon refuses retry without exec")
    func badRetryIsRefused() throws {
        try E2EDaemon.with { daemon in
            #expect(try daemon.ctl("create", "p").status == 0)
            #expect(try daemon.ctl(["then", "p", "--retry", "101", "--", "true"]).status == 64)
            #expect(try daemon.ctl(["then", "p", "--retry", "-1", "--", "true"]).status == 64)
            #expect(try daemon.ctl(["then", "p", "--retry", "2"]).status == 64)
            #expect(try daemon.ctl(["then", "p", "--retry-delay", "2h", "--", "true"]).status == 64)
            let client = try daemon.client()
            #expect(throws: RPCError.self) { try client.call("then", ["id": "p", "retry": 1]) }
            #expect(throws: RPCError.self) { try client.call("then", ["id": "p", "exec": ["true"], "retry": 101]) }
        }
    }
}
