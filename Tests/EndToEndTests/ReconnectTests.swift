import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Clients that survive a restart of the daemon (docs/DURABILITY.md,
/// "Clients that reconnect"): `promisectl wait`, `watch` and `run` attached
/// to a durable daemon that is killed with SIGKILL and started again.
@Suite("clients that survive a restart of the daemon", .serialized)
struct ReconnectTests {
    /// Waits until the daemon serves at least `count` connections besides the one asking.
    private func waitForClients(_ daemon: E2EDurableDaemon, _ count: Int) throws {
        let attached = try E2E.eventually(timeout: .seconds(10)) {
            (try daemon.call("info")["connections"]?.intValue ?? 0) >= count + 1
        }
        #expect(attached, "the clients did not connect")
    }

    @Test("wait survives a kill -9 and restart of the daemon and prints the value resolved after it")
    func waitSurvivesRestart() throws {
        try E2EDurableDaemon.with { daemon in
            try daemon.call("create", ["id": "job"])
            let waiter = try daemon.startCtl(["wait", "job"])
            try waitForClients(daemon, 1)

            daemon.kill9()
            Thread.sleep(forTimeInterval: 0.3)
            try daemon.start()
            try daemon.call("resolve", ["id": "job", "value": "after the restart"])

            let result = try waiter.finish(timeout: .seconds(30))
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "\"after the restart\"\n", "\(result)")
            #expect(result.stderr.contains("lost the daemon; reconnecting"), "\(result)")
        }
    }

    @Test("wait --progress survives a kill -9 and restart of the daemon: it subscribes again, draws the progress made after it, and prints the value")
    func progressWaitSurvivesRestart() throws {
        try E2EDurableDaemon.with { daemon in
            try daemon.call("create", ["id": "job"])
            let waiter = try daemon.startCtl(["wait", "job", "--progress"])
            try waitForClients(daemon, 1)

            daemon.kill9()
            Thread.sleep(forTimeInterval: 0.3)
            try daemon.start()
            try waitForClients(daemon, 1)
            // Told by a notification once subscribed again, or else by the `get` that follows subscribing.
            try daemon.call("progress", ["id": "job", "progress": 0.5, "message": "half way"])
            Thread.sleep(forTimeInterval: 0.3)
            try daemon.call("resolve", ["id": "job", "value": "after the restart"])

            let result = try waiter.finish(timeout: .seconds(30))
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "\"after the restart\"\n", "\(result)")
            #expect(result.stderr.contains("lost the daemon; reconnecting"), "\(result)")
            #expect(result.stderr.contains("job  50%  half way"), "\(result)")
        }
    }

    @Test("wait gives up with 69 when the daemon does not come back within --reconnect-timeout")
    func waitGivesUp() throws {
        try E2EDurableDaemon.with { daemon in
            try daemon.call("create", ["id": "job"])
            let waiter = try daemon.startCtl(["wait", "job", "--reconnect-timeout", "0.5"])
            try waitForClients(daemon, 1)
            daemon.kill9()
            let result = try waiter.finish(timeout: .seconds(30))
            #expect(result.status == 69, "\(result)")
            #expect(result.stderr.contains("did not come back within"), "\(result)")
        }
    }

    @Test("watch reports a settlement made while it was disconnected, once, and one made before, once")
    func watchReportsMissedSettlementOnce() throws {
        try E2EDurableDaemon.with { daemon in
            try daemon.call("create", ["id": "a"])
            try daemon.call("create", ["id": "b"])
            let watcher = try daemon.startCtl(["watch", "a", "b", "--until-settled"])
            try waitForClients(daemon, 1)
            try daemon.call("resolve", ["id": "a", "value": 1])
            #expect(E2E.eventually(timeout: .seconds(10)) { watcher.stdoutSoFar.contains("\"id\":\"a\"") })

            // Stopped, the watcher cannot reconnect before "b" settles on the new daemon.
            kill(watcher.pid, SIGSTOP)
            daemon.kill9()
            try daemon.start()
            try daemon.call("resolve", ["id": "b", "value": 2])
            kill(watcher.pid, SIGCONT)

            let result = try watcher.finish(timeout: .seconds(30))
            #expect(result.status == 0, "\(result)")
            let lines = result.stdout.split(separator: "\n").map { try? JSONValue(parsing: Array($0.utf8)) }
            #expect(lines.count == 2, "\(result)")
            #expect(lines.map { $0?["params"]?["id"] } == ["a", "b"], "\(result)")
            #expect(lines.map { $0?["params"]?["value"] } == [1, 2], "\(result)")
        }
    }

    @Test("run whose command ends while the daemon is down settles its promise after the restart")
    func runSettlesAfterRestart() throws {
        try E2EDurableDaemon.with { daemon in
            let gate = daemon.directory + "/gate"
            let started = daemon.directory + "/started"
            let runner = try daemon.startCtl([
                "run", "job", "--", "sh", "-c", "echo $$ > \"$1\"; while [ ! -e \"$0\" ]; do sleep 0.02; done; echo 42",
                gate, started,
            ])
            #expect(E2E.pid(fromFile: started) != nil, "the command did not start")

            daemon.kill9()
            _ = FileManager.default.createFile(atPath: gate, contents: nil)
            Thread.sleep(forTimeInterval: 0.5)  // the command ends while nothing listens
            try daemon.start()

            let result = try runner.finish(timeout: .seconds(30))
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "42\n", "\(result)")
            let record = try daemon.record("job")
            #expect(record?.state == .fulfilled, "\(String(describing: record?.json))")
            #expect(record?.value == 42)
        }
    }

    @Test("after a restart, a lease taken back within --lease-grace is kept; one not taken back is rejected")
    func leaseGrace() throws {
        try E2EDurableDaemon.with(extraArguments: ["--lease-grace", "1s"]) { daemon in
            let old = try daemon.client()
            try old.call("create", ["id": "kept", "lease": true])
            try old.call("create", ["id": "dropped", "lease": true])

            try daemon.restart()
            let holder = try daemon.client()
            #expect(try E2E.record(holder.call("lease", ["id": "kept"])).state == .pending)
            let dropped = try E2E.record(holder.call("wait", ["id": "dropped", "timeoutMs": 10_000], timeout: .seconds(20)))
            #expect(dropped.state == .rejected)
            #expect(dropped.reasonMessage == "lease expired: the daemon restarted", "\(dropped.json)")
            #expect(dropped.reason?["data"]?["leaseGraceMs"] == 1_000)
            #expect(try daemon.record("kept")?.state == .pending)
            holder.close()
            #expect(try E2E.eventually { try daemon.record("kept")?.state == .rejected })
        }
    }

    @Test("a killed run on an id created beforehand gets that id rejected, not left pending")
    func killedRunOnPrecreatedID() throws {
        try E2EDurableDaemon.with { daemon in
            try daemon.call("create", ["id": "pre"])
            let pidFile = daemon.directory + "/cmd.pid"
            defer { E2E.killGroup(fromPIDFile: pidFile) }
            let runner = try daemon.startCtl(["run", "pre", "--", "sh", "-c", "echo $$ > \"$0\"; exec sleep 30", pidFile])
            defer {
                E2E.killGroup(fromPIDFile: pidFile)
                _ = try? runner.finish(timeout: .seconds(10))
            }
            #expect(E2E.pid(fromFile: pidFile) != nil, "the command did not start")

            kill(runner.pid, SIGKILL)
            let record = try E2E.record(daemon.call("wait", ["id": "pre", "timeoutMs": 10_000]))
            #expect(record.state == .rejected, "\(record.json)")
            #expect(record.reasonMessage == "lease expired: the connection that created it closed", "\(record.json)")
        }
    }

    @Test("a daemon-run sleep step outlives kill -9; the restarted daemon shows its monitor's pid, and cancel stops it")
    func daemonRunStepStoppedAtRestart() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            let command = try daemon.startLongCommand(client)
            defer { E2E.killGroup(fromPIDFile: command.pidFile) }
            guard let pid = E2E.pid(fromFile: command.pidFile) else {
                Issue.record("the command did not start")
                return
            }
            // The record's pid is the step's monitor's, the command's parent.
            let monitor = E2E.parentPID(of: pid)
            // Its pid and start time are stored in the commit after the one that marked it started.
            Thread.sleep(forTimeInterval: 1)
            client.close()
            daemon.kill9()
            #expect(E2E.isAlive(pid), "the command should outlive the killed daemon")

            try daemon.start()
            let running = try daemon.record("c")
            #expect(running?.state == .pending, "\(String(describing: running?.json))")
            #expect(monitor != nil && running?.json["pid"] == monitor.map { .int(Int($0)) })
            #expect(E2E.isAlive(pid), "the restart stopped the command")
            try daemon.call("cancel", ["id": "c"])
            #expect(E2E.eventually(timeout: .seconds(10)) { !E2E.isAlive(pid) }, "the command is still running")
            #expect(try daemon.record("c")?.state == .cancelled)
            #expect(E2E.lines(ofFile: command.runs) == ["ran"])
        }
    }

    @Test("ReconnectingPromiseClient: wait and a subscription carry on across kill -9 and restart, each settlement once")
    func libraryClientCarriesOn() throws {
        try E2EDurableDaemon.with { daemon in
            try daemon.call("create", ["id": "x"])
            try daemon.call("create", ["id": "y"])
            try daemon.call("resolve", ["id": "y", "value": "before"])
            let policy = ReconnectPolicy(initialDelay: .milliseconds(10), giveUpAfter: .seconds(20))
            let watcher = try ReconnectingPromiseClient(socketPath: daemon.socketPath, policy: policy)
            let subscription = try watcher.subscribe(["x", "y"])
            let first = try #require(try subscription.next(timeout: .seconds(10)))
            #expect(first.params["id"] == "y")

            // Connected before the kill, asking after the restart: its first request meets the closed connection.
            let waiter = try ReconnectingPromiseClient(socketPath: daemon.socketPath, policy: policy)
            daemon.kill9()
            try daemon.start()
            try daemon.call("resolve", ["id": "x", "value": "after"])
            let record = try waiter.wait(for: "x", timeout: .seconds(20))
            #expect(record.state == .fulfilled)
            #expect(record.value == "after")
            #expect(waiter.reconnections == 1)

            let second = try #require(try subscription.next(timeout: .seconds(20)))
            #expect(second.params["id"] == "x")
            #expect(second.params["value"] == "after")
            #expect(subscription.allSettled)
            #expect(try subscription.next(timeout: .milliseconds(300)) == nil, "a settlement came twice")
        }
    }
}
