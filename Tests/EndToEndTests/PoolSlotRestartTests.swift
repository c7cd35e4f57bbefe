import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseClient
#endif

/// `promisectl run --pool` across a kill -9 and restart of a durable daemon:
/// the slot went with the old connection, so the run asks for it again on
/// the new one while its command runs, and the pool's limit holds.
/// Structural, not timed: each command waits for a gate file the test
/// creates once it has seen the pool's state; the commands write timestamps.
@Suite("run --pool across a restart of the daemon", .serialized)
struct PoolSlotRestartTests {
    private func pool(_ daemon: E2EDurableDaemon) throws -> JSONValue {
        try daemon.call("info")["pools"]?["cc"] ?? .null
    }

    /// The promise ids of pool cc's `holders` or `waiting` (`{"connection":n,"id":…}` for a client, `{"step":…}` for a step).
    private func ids(_ daemon: E2EDurableDaemon, _ list: String) throws -> [String] {
        try (pool(daemon)[list]?.arrayValue ?? []).map { ($0["id"] ?? $0["step"])?.stringValue ?? "\($0)" }
    }

    /// The first run's files in the daemon's folder: its command's pid, the
    /// gate it waits for, and the time (ns) it ended.
    private struct FirstRunFiles {
        let pid: String, gate: String, end: String
        init(_ daemon: E2EDurableDaemon) {
            pid = daemon.directory + "/first.pid"
            gate = daemon.directory + "/gate"
            end = daemon.directory + "/first.end"
        }
    }

    /// `run --pool cc first` whose command writes its pid to `files.pid`,
    /// waits for `files.gate`, then writes the time (ns) it ended to `files.end`.
    private func startFirstRun(_ daemon: E2EDurableDaemon, _ files: FirstRunFiles) throws -> E2ERunningCommand {
        try daemon.startCtl([
            "run", "--pool", "cc", "first", "--", "sh", "-c",
            "echo $$ > \"$0\"; while [ ! -e \"$1\" ]; do sleep 0.02; done; date +%s%N > \"$2\"",
            files.pid, files.gate, files.end,
        ])
    }

    private func nanoseconds(_ path: String) -> Int? { E2E.lines(ofFile: path).first.flatMap { Int($0) } }

    @Test("a run --pool spanning a restart takes its slot again: with cc=1, a second run --pool cc starts its command only after the first one's ended")
    func slotTakenAgainAfterRestart() throws {
        let daemon = try E2EDurableDaemon(extraArguments: ["--pool", "cc=1"])
        defer { daemon.remove() }
        try daemon.start()
        let directory = daemon.directory
        let files = FirstRunFiles(daemon), secondStart = directory + "/second.start"
        let first = try startFirstRun(daemon, files)
        defer { E2E.killGroup(fromPIDFile: files.pid) }
        #expect(E2E.pid(fromFile: files.pid) != nil, "the first run's command did not start")
        #expect(try ids(daemon, "holders") == ["first"])

        try daemon.restart()
        // The first run reconnects (its backoff starts at 50 ms) and asks for its slot again.
        let retaken = E2E.eventually(timeout: .seconds(10)) { (try? ids(daemon, "holders")) == ["first"] }
        #expect(retaken, "the first run did not take its slot again: \(String(describing: try? pool(daemon)))")

        let second = try daemon.startCtl(["run", "--pool", "cc", "second", "--", "sh", "-c", "date +%s%N > \"$0\"", secondStart])
        // It queues behind the first run, or (the bug) runs at once.
        _ = E2E.eventually(timeout: .seconds(10)) {
            (try? pool(daemon)["queued"]) == 1 || FileManager.default.fileExists(atPath: secondStart)
        }
        #expect(!FileManager.default.fileExists(atPath: secondStart), "the second command started while the first ran")
        #expect(try ids(daemon, "waiting") == ["second"])

        _ = FileManager.default.createFile(atPath: files.gate, contents: nil)
        let firstResult = try first.finish(timeout: .seconds(30))
        let secondResult = try second.finish(timeout: .seconds(30))
        #expect(firstResult.status == 0, "\(firstResult)")
        #expect(secondResult.status == 0, "\(secondResult)")
        let ended = nanoseconds(files.end), started = nanoseconds(secondStart)
        #expect(ended != nil && started != nil, "timestamps: \(String(describing: ended)) \(String(describing: started))")
        if let ended, let started {
            #expect(started >= ended, "the second command started \(ended - started) ns before the first one ended")
        }
        #expect(try daemon.record("first")?.state == .fulfilled)
        #expect(try daemon.record("second")?.state == .fulfilled)
        #expect(E2E.eventually(timeout: .seconds(10)) { (try? pool(daemon)["running"]) == 0 })
    }

    @Test("a restarted daemon with no free slot queues the run's new pool.acquire: its command keeps running, says so on stderr, and holds the slot once its turn comes")
    func reclaimWaitsItsTurnWhileTheCommandRuns() throws {
        let daemon = try E2EDurableDaemon()
        defer { daemon.remove() }
        try daemon.start(extraArguments: ["--pool", "cc=1"])
        let files = FirstRunFiles(daemon)
        let first = try startFirstRun(daemon, files)
        defer { E2E.killGroup(fromPIDFile: files.pid) }
        let commandPid = E2E.pid(fromFile: files.pid)
        #expect(commandPid != nil, "the first run's command did not start")

        // A limit of 0 after the restart: no slot is free when the run asks again.
        try daemon.restart(extraArguments: ["--pool", "cc=0"])
        let queued = E2E.eventually(timeout: .seconds(10)) { (try? ids(daemon, "waiting")) == ["first"] }
        #expect(queued, "the first run's pool.acquire did not queue: \(String(describing: try? pool(daemon)))")
        #expect(commandPid.map(E2E.isAlive) == true, "the command stopped while its slot was asked for again")
        #expect(E2E.eventually(timeout: .seconds(10)) { first.stderrSoFar.contains("had no free slot of pool cc for first") },
                "\(first.stderrSoFar)")

        try daemon.call("pool.set", ["pool": "cc", "limit": 1])
        #expect(E2E.eventually(timeout: .seconds(10)) { (try? ids(daemon, "holders")) == ["first"] })
        #expect(try pool(daemon)["queued"] == 0)
        _ = FileManager.default.createFile(atPath: files.gate, contents: nil)
        let result = try first.finish(timeout: .seconds(30))
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("took a slot of pool cc again for first"), "\(result)")
        #expect(try daemon.record("first")?.state == .fulfilled)
        #expect(E2E.eventually(timeout: .seconds(10)) { (try? pool(daemon)["running"]) == 0 })
    }

    @Test("a run whose command ends while its slot is still asked for again settles, exits with the command's status and leaves no turn queued")
    func commandEndsWhileReclaimQueued() throws {
        let daemon = try E2EDurableDaemon()
        defer { daemon.remove() }
        try daemon.start(extraArguments: ["--pool", "cc=1"])
        let files = FirstRunFiles(daemon)
        let first = try startFirstRun(daemon, files)
        defer { E2E.killGroup(fromPIDFile: files.pid) }
        #expect(E2E.pid(fromFile: files.pid) != nil, "the first run's command did not start")

        try daemon.restart(extraArguments: ["--pool", "cc=0"])
        #expect(E2E.eventually(timeout: .seconds(10)) { (try? ids(daemon, "waiting")) == ["first"] })
        _ = FileManager.default.createFile(atPath: files.gate, contents: nil)
        let result = try first.finish(timeout: .seconds(30))
        #expect(result.status == 0, "\(result)")
        #expect(try daemon.record("first")?.state == .fulfilled)
        #expect(E2E.eventually(timeout: .seconds(10)) { (try? pool(daemon)["queued"]) == 0 })
        #expect(try pool(daemon)["running"] == 0)
    }
    @Test("a run --pool still waiting for a slot when the daemon restarts waits again on the new connection, then runs its command once")
    func slotWaitSurvivesRestart() throws {
        let daemon = try E2EDurableDaemon()
        defer { daemon.remove() }
        try daemon.start(extraArguments: ["--pool", "cc=0"])
        let runs = daemon.directory + "/runs"
        let runner = try daemon.startCtl(["run", "--pool", "cc", "job", "--", "sh", "-c", "echo ran >> \"$0\"; echo 5", runs])
        #expect(E2E.eventually(timeout: .seconds(10)) { (try? ids(daemon, "waiting")) == ["job"] })

        try daemon.restart(extraArguments: ["--pool", "cc=1"])
        let result = try runner.finish(timeout: .seconds(30))
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "5\n", "\(result)")
        #expect(E2E.lines(ofFile: runs) == ["ran"])
        #expect(try daemon.record("job")?.state == .fulfilled)
        #expect(try daemon.record("job")?.value == 5)
        #expect(E2E.eventually(timeout: .seconds(10)) { (try? pool(daemon)["running"]) == 0 })
    }
    @Test("known limit: a step queued before the restart starts as the daemon starts, before the run is back; the run's slot waits behind it")
    func restoredQueuedStepGoesFirst() throws {
        let daemon = try E2EDurableDaemon(extraArguments: ["--pool", "cc=1"])
        defer { daemon.remove() }
        try daemon.start()
        let directory = daemon.directory
        let files = FirstRunFiles(daemon), stepStarted = directory + "/step.started"
        let first = try startFirstRun(daemon, files)
        defer { E2E.killGroup(fromPIDFile: files.pid) }
        #expect(E2E.pid(fromFile: files.pid) != nil, "the first run's command did not start")
        try daemon.call("create", ["id": "src"])
        try daemon.call("then", [
            "id": "src", "childId": "step", "pool": "cc",
            "exec": ["sh", "-c", "echo $$ > \"$0\"; while [ ! -e \"$1\" ]; do sleep 0.02; done", .string(stepStarted), .string(files.gate)],
        ])
        try daemon.call("resolve", ["id": "src", "value": 1])
        #expect(try ids(daemon, "waiting") == ["step"])

        try daemon.restart()
        defer { E2E.killGroup(fromPIDFile: stepStarted) }
        #expect(E2E.pid(fromFile: stepStarted) != nil, "the restored queued step did not start")
        #expect(E2E.eventually(timeout: .seconds(10)) { (try? ids(daemon, "waiting")) == ["first"] })
        #expect(try ids(daemon, "holders") == ["step"])
        #expect(E2E.eventually(timeout: .seconds(10)) { first.stderrSoFar.contains("had no free slot of pool cc for first") },
                "\(first.stderrSoFar)")

        _ = FileManager.default.createFile(atPath: files.gate, contents: nil)
        let result = try first.finish(timeout: .seconds(30))
        #expect(result.status == 0, "\(result)")
        #expect(try E2E.record(daemon.call("wait", ["id": "step", "timeoutMs": 20_000])).state == .fulfilled)
        #expect(E2E.eventually(timeout: .seconds(10)) { (try? pool(daemon)["running"]) == 0 && (try? pool(daemon)["queued"]) == 0 })
    }
}
