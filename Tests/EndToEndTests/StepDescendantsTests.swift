import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseClient
#endif

/// Everything a `then … exec` step started goes when the step does: its
/// monitor (`promised --step-monitor`) is their child subreaper and kills
/// them at cancel, when the command ends, and when a step a restarted daemon
/// re-attached to is cancelled.
@Suite("step descendants")
struct StepDescendantsTests {
    /// A shell command that starts `sleep 300` in a session of its own
    /// (out of the step's process group), writes that sleep's pid to
    /// `pidFile`, waits until it is written, then runs `rest`.
    static func escaping(pidFile: String, then rest: String) -> [String] {
        ["sh", "-c", """
            setsid sh -c 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 300' sh "$1" &
            while [ ! -s "$1" ]; do sleep 0.01; done
            \(rest)
            """, "sh", pidFile]
    }

    @Test("a process a step started in its own session is killed when the step is cancelled")
    func cancelKillsEscapedSession() throws {
        try E2EDaemon.with { daemon in
            let pidFile = daemon.directory + "/escaped.pid"
            let created = try daemon.ctl("create", "p")
            #expect(created.status == 0)
            #expect(try daemon.ctl(["then", "p", "--id", "x", "--"] + Self.escaping(pidFile: pidFile, then: "exec sleep 100")).status == 0)
            #expect(try daemon.ctl("resolve", "p", "1").status == 0)
            let escaped = try #require(E2E.pid(fromFile: pidFile), "the step did not start its sleep")
            defer { kill(escaped, SIGKILL) }
            #expect(E2E.isAlive(escaped))
            #expect(try Self.session(of: escaped) == escaped, "the sleep leads a session of its own")
            #expect(try daemon.ctl("cancel", "x").status == 0)
            #expect(E2E.eventually(timeout: .seconds(10)) { !E2E.isAlive(escaped) }, "the escaped sleep outlived cancel")
        }
    }

    @Test("a process a step started in its own session is killed when the step's command ends, and the step fulfils")
    func finishKillsEscapedSession() throws {
        try E2EDaemon.with { daemon in
            let pidFile = daemon.directory + "/escaped.pid"
            let created = try daemon.ctl("create", "p")
            #expect(created.status == 0)
            #expect(try daemon.ctl(["then", "p", "--id", "x", "--"] + Self.escaping(pidFile: pidFile, then: "echo built")).status == 0)
            #expect(try daemon.ctl("resolve", "p", "1").status == 0)
            #expect(try daemon.ctl("wait", "x", "--timeout", "10").status == 0)
            #expect(try daemon.ctl("get", "x").stdout == "fulfilled \"built\"\n")
            let escaped = try #require(E2E.pid(fromFile: pidFile))
            defer { kill(escaped, SIGKILL) }
            #expect(E2E.eventually(timeout: .seconds(10)) { !E2E.isAlive(escaped) }, "the escaped sleep outlived its step")
        }
    }

    @Test("a process a step started in its own session outlives a kill -9 of the daemon, and goes when the re-attached step is cancelled")
    func restartKillsEscapedSession() throws {
        try E2EDurableDaemon.with { daemon in
            let pidFile = daemon.directory + "/escaped.pid"
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            try client.call("then", ["id": "p", "childId": "x",
                                     "exec": .array(Self.escaping(pidFile: pidFile, then: "exec sleep 100").map(JSONValue.string))])
            try client.call("resolve", ["id": "p", "value": 1])
            let escaped = try #require(E2E.pid(fromFile: pidFile), "the step did not start its sleep")
            defer { kill(escaped, SIGKILL) }
            // Its monitor's pid and start time are stored in the commit after the one that marked it started.
            Thread.sleep(forTimeInterval: 0.5)
            client.close()
            daemon.kill9()
            Thread.sleep(forTimeInterval: 0.3)
            #expect(E2E.isAlive(escaped), "the sleep went with the daemon: nothing left to test")
            try daemon.start()
            #expect(try daemon.record("x")?.state == .pending, "the step was not re-attached")
            #expect(E2E.isAlive(escaped), "the restart stopped the step")
            #expect(try daemon.ctl(["cancel", "x"]).status == 0)
            #expect(E2E.eventually(timeout: .seconds(10)) { !E2E.isAlive(escaped) }, "the escaped sleep outlived the cancel")
            let record = try #require(try daemon.record("x"))
            #expect(record.state == .cancelled, "\(record.json)")
        }
    }

    /// Field 6 (session) of /proc/PID/stat.
    static func session(of pid: pid_t) throws -> pid_t? {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        return pid_t(fields[3])
    }
}
