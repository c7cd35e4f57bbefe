import Foundation
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseJSON
import PromiseClient
#endif

/// Pipelines of daemon-run steps, as a C build makes them: a failure names
/// the step where it began, and a pipeline can be stopped as a whole
/// (`all --stop-on-failure`, `cancel` of its fulfilled root, `cancel
/// --prefix`, `wait --cancel-on-signal`), leaving no step's process running.
@Suite("Pipelines: failures name their step, and stopping leaves nothing running")
struct PipelineFailureTests {
    /// A compile step that fails as cc does.
    private static let failingCompile = ["sh", "-c", "echo \"f07.c:3: error: boom\" >&2; exit 1"]

    /// A long step whose processes can be found by `marker`: the command
    /// is `sleep`, run through a symlink named `marker`, so its command
    /// line names it (as `pgrep -f marker` would see).
    private struct Sleeper {
        let marker: String

        init(in daemon: E2EDaemon) throws {
            marker = daemon.directory + "/step-" + UUID().uuidString.prefix(8)
            try FileManager.default.createSymbolicLink(atPath: marker, withDestinationPath: "/usr/bin/sleep")
        }

        /// The command of a step that runs for 30 s.
        var command: [String] { [marker, "30"] }

        /// Live processes whose command line holds the marker (what `pgrep -f marker` lists),
        /// but for the steps' monitors (`promised --step-monitor … -- marker 30`).
        var running: [pid_t] {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.compactMap { pid_t($0) }.filter { pid in
                guard let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
                let text = String(decoding: cmdline, as: UTF8.self)
                return text.contains(marker) && !text.contains("--step-monitor") && E2E.isAlive(pid)
            }
        }

        /// Kills what is left, so that a failing test leaves nothing behind.
        func killAll() {
            for pid in running { kill(pid, SIGKILL) }
        }
    }

    /// Runs promisectl, requiring success.
    @discardableResult
    private func ctl(_ daemon: E2EDaemon, _ arguments: String...) throws -> E2ECommandResult {
        try ctl(daemon, arguments)
    }

    @discardableResult
    private func ctl(_ daemon: E2EDaemon, _ arguments: [String]) throws -> E2ECommandResult {
        let result = try daemon.ctl(arguments)
        try #require(result.status == 0, "promisectl \(arguments): \(result)")
        return result
    }

    private func state(_ daemon: E2EDaemon, _ id: String) throws -> String? {
        try daemon.client().call("get", ["id": .string(id)])["state"]?.stringValue
    }

    @Test("a failed compile step is named in wait's message of a downstream then and all, with its stderr; exit 1")
    func failedStepNamedDownstream() throws {
        try E2EDaemon.with { daemon in
            let p = E2E.uniqueID("cb")
            try ctl(daemon, "create", "\(p)/src")
            try ctl(daemon, "then", "\(p)/src", "--id", "cc/f07", "--", Self.failingCompile[0], Self.failingCompile[1],
                    Self.failingCompile[2])
            try ctl(daemon, "then", "\(p)/src", "--id", "cc/f08", "--", "sh", "-c", "echo '\"f08.o\"'")
            try ctl(daemon, "all", "cc/f07", "cc/f08", "--id", "\(p)/objs")
            try ctl(daemon, "then", "\(p)/objs", "--id", "\(p)/link", "--", "sh", "-c", "echo linked")
            try ctl(daemon, "resolve", "\(p)/src", "1")

            let link = try daemon.ctl("wait", "\(p)/link", "--timeout", "20")
            #expect(link.status == 1, "\(link)")
            #expect(link.stdout == "")
            #expect(link.stderr == "promisectl: \(p)/link rejected: cc/f07 failed: f07.c:3: error: boom (code 1)\n")
            let objs = try daemon.ctl("wait", "\(p)/objs")
            #expect(objs.stderr == "promisectl: \(p)/objs rejected: cc/f07 failed: f07.c:3: error: boom (code 1)\n")
            let step = try daemon.ctl("wait", "cc/f07")
            #expect(step.status == 1)
            #expect(step.stderr == "promisectl: cc/f07 failed: f07.c:3: error: boom (code 1)\n")
            let record = try daemon.client().call("get", ["id": .string("\(p)/link")])
            #expect(record["reason"]?["origin"] == "cc/f07")
        }
    }

    @Test("all-errors: wait lists each failed input's id and message, under the all's own line")
    func allErrorsListsEachFailure() throws {
        try E2EDaemon.with { daemon in
            let p = E2E.uniqueID("ae")
            try ctl(daemon, "create", "\(p)/src")
            try ctl(daemon, "then", "\(p)/src", "--id", "\(p)/cc/f07", "--", "sh", "-c",
                    "echo 'f07.c:3: error: boom' >&2; exit 1")
            try ctl(daemon, "then", "\(p)/src", "--id", "\(p)/cc/f08", "--", "sh", "-c", "echo 1")
            try ctl(daemon, "then", "\(p)/src", "--id", "\(p)/cc/f09", "--", "sh", "-c",
                    "echo 'f09.c:1: error: bad' >&2; exit 2")
            try ctl(daemon, "all", "\(p)/cc/f07", "\(p)/cc/f08", "\(p)/cc/f09", "--policy", "all-errors", "--id", "\(p)/objs")
            try ctl(daemon, "resolve", "\(p)/src", "1")

            let waited = try daemon.ctl("wait", "\(p)/objs", "--timeout", "20")
            #expect(waited.status == 1)
            #expect(waited.stderr == """
                promisectl: \(p)/objs failed: 2 of 3 input promises were rejected
                promisectl: \(p)/cc/f07 failed: f07.c:3: error: boom (code 1)
                promisectl: \(p)/cc/f09 failed: f09.c:1: error: bad (code 2)

                """)
        }
    }

    @Test("all --stop-on-failure: once a step fails, no other step of it is left running; without it they run on")
    func stopOnFailureLeavesNothingRunning() throws {
        for stop in [true, false] {
            try E2EDaemon.with { daemon in
                let sleeper = try Sleeper(in: daemon)
                defer { sleeper.killAll() }
                let p = E2E.uniqueID("sf")
                try ctl(daemon, "create", "\(p)/src")
                try ctl(daemon, "create", "\(p)/trigger")
                for step in ["a", "b"] {
                    try ctl(daemon, ["then", "\(p)/src", "--id", "\(p)/cc/\(step)", "--"] + sleeper.command)
                }
                try ctl(daemon, "then", "\(p)/trigger", "--id", "\(p)/cc/f07", "--", Self.failingCompile[0],
                        Self.failingCompile[1], Self.failingCompile[2])
                try ctl(daemon, "create", "\(p)/gate")
                try ctl(daemon, ["then", "\(p)/gate", "--id", "\(p)/cc/queued", "--"] + sleeper.command)
                var all = ["all", "\(p)/cc/a", "\(p)/cc/b", "\(p)/cc/f07", "\(p)/cc/queued", "--id", "\(p)/objs"]
                if stop { all.append("--stop-on-failure") }
                try #require(try daemon.ctl(all).status == 0)
                try ctl(daemon, "resolve", "\(p)/src", "1")
                #expect(E2E.eventually(timeout: .seconds(10)) { sleeper.running.count == 2 })

                try ctl(daemon, "resolve", "\(p)/trigger", "1")
                let waited = try daemon.ctl("wait", "\(p)/objs", "--timeout", "20")
                #expect(waited.stderr.contains("cc/f07 failed: f07.c:3: error: boom"), "\(waited)")
                if stop {
                    #expect(E2E.eventually(timeout: .seconds(10)) { sleeper.running.isEmpty }, "\(sleeper.running)")
                    for step in ["a", "b", "queued"] { #expect(try state(daemon, "\(p)/cc/\(step)") == "cancelled") }
                    // The queued step never starts, even once its parent is resolved.
                    #expect(try daemon.ctl("resolve", "\(p)/gate", "1").status != 0)
                } else {
                    Thread.sleep(forTimeInterval: 0.5)
                    #expect(sleeper.running.count == 2)
                    #expect(try state(daemon, "\(p)/cc/a") == "pending")
                    try ctl(daemon, "resolve", "\(p)/gate", "1")
                    #expect(E2E.eventually(timeout: .seconds(10)) { sleeper.running.count == 3 })
                }
                #expect(sleeper.running.count == (stop ? 0 : 3))
            }
        }
    }

    @Test("cancel of a fulfilled root stops every step running or queued under it; the root stays fulfilled (exit 5)")
    func cancelFulfilledRootStopsEverything() throws {
        try E2EDaemon.with { daemon in
            let sleeper = try Sleeper(in: daemon)
            defer { sleeper.killAll() }
            let p = E2E.uniqueID("root")
            try ctl(daemon, "create", "\(p)/src")
            for step in ["a", "b", "c"] {
                try ctl(daemon, ["then", "\(p)/src", "--id", "\(p)/cc/\(step)", "--"] + sleeper.command)
            }
            try ctl(daemon, "all", "\(p)/cc/a", "\(p)/cc/b", "\(p)/cc/c", "--id", "\(p)/objs")
            try ctl(daemon, ["then", "\(p)/objs", "--id", "\(p)/link", "--"] + sleeper.command)
            try ctl(daemon, "resolve", "\(p)/src", "1")
            #expect(E2E.eventually(timeout: .seconds(10)) { sleeper.running.count == 3 })

            let cancelled = try daemon.ctl("cancel", "\(p)/src")
            #expect(cancelled.status == 5, "\(cancelled)")
            #expect(E2E.eventually(timeout: .seconds(10)) { sleeper.running.isEmpty }, "\(sleeper.running)")
            #expect(try state(daemon, "\(p)/src") == "fulfilled")
            for step in ["cc/a", "cc/b", "cc/c", "link"] { #expect(try state(daemon, "\(p)/\(step)") == "cancelled") }
        }
    }

    @Test("cancel --prefix cancels every pending promise of a pipeline, prints how many, and stops its steps")
    func cancelPrefixCountsAndStops() throws {
        try E2EDaemon.with { daemon in
            let sleeper = try Sleeper(in: daemon)
            defer { sleeper.killAll() }
            let p = E2E.uniqueID("pfx")
            try ctl(daemon, "create", "\(p)/src")
            try ctl(daemon, "create", "\(p)/done")
            try ctl(daemon, "resolve", "\(p)/done", "1")
            for step in ["a", "b"] {
                try ctl(daemon, ["then", "\(p)/src", "--id", "\(p)/cc/\(step)", "--"] + sleeper.command)
            }
            try ctl(daemon, "all", "\(p)/cc/a", "\(p)/cc/b", "--id", "\(p)/objs")
            try ctl(daemon, "create", "\(p)x/other")
            try ctl(daemon, "resolve", "\(p)/src", "1")
            #expect(E2E.eventually(timeout: .seconds(10)) { sleeper.running.count == 2 })

            let cancelled = try daemon.ctl("cancel", "--prefix", "\(p)/")
            #expect(cancelled.status == 0, "\(cancelled)")
            #expect(cancelled.stdout == "3\n")  // cc/a, cc/b and objs: src and done had settled
            #expect(E2E.eventually(timeout: .seconds(10)) { sleeper.running.isEmpty }, "\(sleeper.running)")
            #expect(try state(daemon, "\(p)x/other") == "pending")
            #expect(try daemon.ctl("cancel", "--prefix", "\(p)/").stdout == "0\n")
            #expect(try daemon.ctl("cancel", "--prefix", "").status == 64)
            #expect(try daemon.ctl("cancel", "x", "--prefix", "y").status == 64)
        }
    }

    @Test("wait --cancel-on-signal: SIGINT or SIGTERM to promisectl cancels the pipeline it waits for and exits 130 or 143",
          arguments: [(SIGINT, 130), (SIGTERM, 143)] as [(Int32, Int32)])
    func waitCancelsOnSignal(signal: Int32, status: Int32) throws {
        try E2EDaemon.with { daemon in
            let sleeper = try Sleeper(in: daemon)
            defer { sleeper.killAll() }
            let p = E2E.uniqueID("sig")
            try ctl(daemon, "create", "\(p)/src")
            for step in ["a", "b"] {
                try ctl(daemon, ["then", "\(p)/src", "--id", "\(p)/cc/\(step)", "--"] + sleeper.command)
            }
            try ctl(daemon, "all", "\(p)/cc/a", "\(p)/cc/b", "--id", "\(p)/objs")
            try ctl(daemon, "then", "\(p)/objs", "--id", "\(p)/test", "--", "true")
            try ctl(daemon, "resolve", "\(p)/src", "1")
            #expect(E2E.eventually(timeout: .seconds(10)) { sleeper.running.count == 2 })

            let log = daemon.directory + "/wait.log"
            let waiter = try E2ESpawnedProcess(
                E2EBinaries.promisectl, ["wait", "\(p)/test", "--cancel-on-signal", "--socket", daemon.socketPath],
                logPath: log)
            defer { if waiter.isRunning { kill(waiter.pid, SIGKILL) } }
            // Connected and waiting: the daemon counts its two connections (the wait's, and this one's).
            let client = try daemon.client()
            #expect(E2E.eventually(timeout: .seconds(10)) {
                (try? client.call("info"))?["connections"]?.intValue == 2
            })
            Thread.sleep(forTimeInterval: 0.2)  // its wait request sent
            kill(waiter.pid, signal)
            #expect(E2E.eventually(timeout: .seconds(10)) { !waiter.isRunning })
            #expect(waiter.terminationStatus == status)
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(output == "promisectl: interrupted: cancelled \(p)/test\n")
            #expect(E2E.eventually(timeout: .seconds(10)) { sleeper.running.isEmpty }, "\(sleeper.running)")
            for id in ["test", "objs", "cc/a", "cc/b"] { #expect(try state(daemon, "\(p)/\(id)") == "cancelled") }
        }
    }
}
