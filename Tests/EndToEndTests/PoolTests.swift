import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// Pools against the real binaries: steps past a limit queue and start in
/// order, a cancelled queued step never runs, a killed `promisectl run
/// --pool` frees its slot, and queued steps survive a restart. Structural,
/// not timed: each step waits for a gate file the test creates once it has
/// seen the queue.
@Suite("pools: limits that queue")
struct PoolTests {
    /// A step command that writes `start-N` to `log`, waits for `gate`, then writes `end-N`.
    private static func gatedStep(_ number: Int, log: String, gate: String) -> [String] {
        ["sh", "-c", "echo start-\(number) >> '\(log)'; while [ ! -e '\(gate)' ]; do sleep 0.02; done; echo end-\(number) >> '\(log)'"]
    }

    private static func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    private static func pool(_ name: String, _ client: BlockingPromiseClient) throws -> JSONValue {
        try client.call("info")["pools"]?[name] ?? .null
    }

    @Test("with a limit of 1, three steps queue and run one after the other, in the order they queued")
    func stepsRunInOrder() throws {
        try E2EDaemon.with(extraArguments: ["--pool", "cc=1"]) { daemon in
            let client = try daemon.client()
            let log = daemon.directory + "/order"
            let gate = daemon.directory + "/gate"
            try client.call("create", ["id": "a"])
            for number in 1...3 {
                try client.call("then", [
                    "id": "a", "childId": .string("s\(number)"), "pool": "cc",
                    "exec": .array(Self.gatedStep(number, log: log, gate: gate).map(JSONValue.string)),
                ])
            }
            try client.call("resolve", ["id": "a", "value": 1])
            #expect(E2E.eventually(timeout: .seconds(20)) { Self.lines(log) == ["start-1"] })
            let pool = try Self.pool("cc", client)
            #expect(pool["running"] == 1)
            #expect(pool["queued"] == 2)
            #expect(pool["waiting"] == [["step": "s2"], ["step": "s3"]])
            #expect(try client.call("get", ["id": "s3"])["queued"] == true)
            #expect(try client.call("get", ["id": "s3"])["state"] == "pending")

            _ = FileManager.default.createFile(atPath: gate, contents: nil)
            for number in 1...3 {
                let record = try E2E.record(client.call("wait", ["id": .string("s\(number)"), "timeoutMs": 20_000]))
                #expect(record.state == .fulfilled, "s\(number): \(record.json)")
            }
            #expect(Self.lines(log) == ["start-1", "end-1", "start-2", "end-2", "start-3", "end-3"])
            #expect(try Self.pool("cc", client)["running"] == 0)
        }
    }

    @Test("cancelling a queued step takes it out of the queue: it never starts, and the step behind it does")
    func cancelQueued() throws {
        try E2EDaemon.with(extraArguments: ["--max-running-processes", "1"]) { daemon in
            let log = daemon.directory + "/order"
            let gate = daemon.directory + "/gate"
            _ = try daemon.ctl("create", "a")
            for number in 1...3 {
                let then = try daemon.ctl(["then", "a", "--id", "s\(number)", "--"] + Self.gatedStep(number, log: log, gate: gate))
                #expect(then.status == 0, "\(then)")
            }
            _ = try daemon.ctl("resolve", "a", "1")
            #expect(E2E.eventually(timeout: .seconds(20)) { Self.lines(log) == ["start-1"] })
            let cancel = try daemon.ctl("cancel", "s2")
            #expect(cancel.status == 0, "\(cancel)")
            let pools = try daemon.ctl("pools")
            #expect(pools.stdout == "NAME LIMIT RUNNING QUEUED\ndefault 1 1 1\n", "\(pools)")

            _ = FileManager.default.createFile(atPath: gate, contents: nil)
            #expect(try daemon.ctl("wait", "s3", "--timeout", "20").status == 0)
            #expect(try daemon.ctl("get", "s2").stdout.hasPrefix("cancelled"))
            #expect(Self.lines(log) == ["start-1", "end-1", "start-3", "end-3"])
        }
    }

    @Test("a promisectl run --pool killed with SIGKILL frees its slot, and a run waiting for it proceeds")
    func killedRunFreesSlot() throws {
        try E2EDaemon.with(extraArguments: ["--pool", "cc=1"]) { daemon in
            let client = try daemon.client()
            let pidFile = daemon.directory + "/holder.pid"
            let holder = try daemon.startCtl("run", "--pool", "cc", "job1", "--", "sh", "-c", "echo $$ > '\(pidFile)'; exec sleep 60")
            guard let commandPid = E2E.pid(fromFile: pidFile) else {
                Issue.record("the first run's command did not start")
                return
            }
            defer { kill(commandPid, SIGKILL) }
            #expect(try Self.pool("cc", client)["holders"]?.arrayValue?.first?["id"] == "job1")

            let waiter = try daemon.startCtl("run", "--pool", "cc", "job2", "--", "echo", "ran")
            #expect(E2E.eventually(timeout: .seconds(20)) { (try? Self.pool("cc", client)["queued"]) == 1 })
            #expect(try client.call("get", ["id": "job2"])["state"] == "pending")

            kill(holder.pid, SIGKILL)
            let second = try waiter.finish()
            #expect(second.status == 0, "\(second)")
            #expect(second.stdout == "ran\n")
            #expect(try E2E.record(client.call("get", ["id": "job2"])).value == "ran")
            // The killed run's promise was leased: the daemon rejected it as its connection closed.
            #expect(try E2E.record(client.call("get", ["id": "job1"])).state == .rejected)
            #expect(E2E.eventually(timeout: .seconds(20)) { (try? Self.pool("cc", client)["running"]) == 0 })
        }
    }

    @Test("a run whose promise is cancelled while it waits for a slot does not run its command and exits 2")
    func runCancelledWhileWaiting() throws {
        try E2EDaemon.with(extraArguments: ["--pool", "cc=0"]) { daemon in
            let client = try daemon.client()
            let marker = daemon.directory + "/ran"
            let waiter = try daemon.startCtl("run", "--pool", "cc", "job", "--", "touch", marker)
            #expect(E2E.eventually(timeout: .seconds(20)) { (try? Self.pool("cc", client)["queued"]) == 1 })
            try client.call("cancel", ["id": "job"])
            let result = try waiter.finish()
            #expect(result.status == 2, "\(result)")
            #expect(!FileManager.default.fileExists(atPath: marker))
            #expect(E2E.eventually(timeout: .seconds(20)) { (try? Self.pool("cc", client)["queued"]) == 0 })
        }
    }

    @Test("with --stop-steps, queued steps stay queued across a daemon restart and then run in their order; the one that ran is not run again")
    func queueSurvivesRestart() throws {
        let daemon = try E2EDurableDaemon.started(extraArguments: ["--pool", "cc=1", "--stop-steps"])
        defer { daemon.remove() }
        let log = daemon.directory + "/order"
        let gate = daemon.directory + "/gate"
        do {
            let client = try daemon.client()
            defer { client.close() }
            try client.call("create", ["id": "a"])
            for number in 1...3 {
                try client.call("then", [
                    "id": "a", "childId": .string("s\(number)"), "pool": "cc",
                    "exec": .array(Self.gatedStep(number, log: log, gate: gate).map(JSONValue.string)),
                ])
            }
            try client.call("resolve", ["id": "a", "value": 1])
            #expect(E2E.eventually(timeout: .seconds(20)) { Self.lines(log) == ["start-1"] })
            #expect(try Self.pool("cc", client)["queued"] == 2)
        }
        // A clean stop with --stop-steps ends the running step (it is not run again); the queued ones stay pending.
        #expect(daemon.terminate() == 0)
        try daemon.start()
        let client = try daemon.client()
        defer { client.close() }
        #expect(try client.call("get", ["id": "s1"])["reason"]?["message"]
            == "not run again: its command was running when the daemon stopped")
        #expect(E2E.eventually(timeout: .seconds(20)) { Self.lines(log) == ["start-1", "start-2"] })
        #expect(try client.call("get", ["id": "s3"])["queued"] == true)
        _ = FileManager.default.createFile(atPath: gate, contents: nil)
        for number in 2...3 {
            let record = try E2E.record(client.call("wait", ["id": .string("s\(number)"), "timeoutMs": 20_000]))
            #expect(record.state == .fulfilled, "s\(number): \(record.json)")
        }
        #expect(Self.lines(log).dropFirst(1) == ["start-2", "end-2", "start-3", "end-3"])
    }

    @Test("a limit set with promisectl pool survives a kill -9 and a clean restart; a new --pool flag for it wins")
    func poolLimitSurvivesRestart() throws {
        let daemon = try E2EDurableDaemon.started(extraArguments: ["--pool", "cc=2"])
        defer { daemon.remove() }
        #expect(try daemon.ctl(["pool", "cc", "1"]).status == 0)
        #expect(try daemon.ctl(["pool", "gpu", "3"]).status == 0)
        try daemon.restart()
        #expect(try daemon.ctl(["pools"]).stdout == "NAME LIMIT RUNNING QUEUED\ncc 1 0 0\ndefault 256 0 0\ngpu 3 0 0\n")
        #expect(daemon.terminate() == 0)
        try daemon.start()
        #expect(try daemon.ctl(["pools"]).stdout == "NAME LIMIT RUNNING QUEUED\ncc 1 0 0\ndefault 256 0 0\ngpu 3 0 0\n")
        try daemon.restart(extraArguments: ["--pool", "cc=4"])
        let pools = try daemon.ctl(["pools"])
        #expect(pools.stdout.contains("cc 4 0 0\n"), "\(pools)")
    }

    @Test("with --max-running-processes 2, 21 steps all run (none is refused as too many running processes)")
    func noRefusal() throws {
        try E2EDaemon.with(extraArguments: ["--max-running-processes", "2"]) { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "src"])
            let ids = (1...21).map { "obj/\($0).o" }
            for id in ids {
                try client.call("then", ["id": "src", "childId": .string(id),
                                         "exec": ["sh", "-c", "sleep 0.05; echo \"$PROMISE_CHILD_ID\""]])
            }
            try client.call("resolve", ["id": "src", "value": 1])
            for id in ids {
                let record = try E2E.record(client.call("wait", ["id": .string(id), "timeoutMs": 30_000]))
                #expect(record.state == .fulfilled, "\(id): \(record.json)")
                #expect(record.value == .string(id))
            }
        }
    }

    @Test("promisectl pool sets and shows a limit; pools lists every pool; an unknown pool in then or run exits 64")
    func poolCommands() throws {
        try E2EDaemon.with(extraArguments: ["--pool", "cc=2"]) { daemon in
            let set = try daemon.ctl("pool", "ld", "3")
            #expect(set.stdout == #"{"holders":[],"limit":3,"queued":0,"running":0,"waiting":[]}"# + "\n", "\(set)")
            let list = try daemon.ctl("pools")
            #expect(list.stdout == "NAME LIMIT RUNNING QUEUED\ncc 2 0 0\ndefault 256 0 0\nld 3 0 0\n", "\(list)")
            _ = try daemon.ctl("create", "a")
            let unknown = try daemon.ctl("then", "a", "--pool", "nope", "--", "true")
            #expect(unknown.status == 64, "\(unknown)")
            #expect(unknown.stderr.contains("no pool named \"nope\""))
            #expect(try daemon.ctl("pool", "bad name", "1").status == 64)
            let run = try daemon.ctl("run", "--pool", "nope", "job", "--", "true")
            #expect(run.status == 64, "\(run)")
            #expect(try daemon.ctl("get", "job").status == 4, "run with an unknown pool creates nothing")
        }
    }
}
