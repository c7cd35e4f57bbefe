import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What a `promised --store DIR` killed with SIGKILL has after it starts again on DIR.
@Suite("durable store: what survives a restart")
struct DurabilityRestartTests {
    private func get(_ client: BlockingPromiseClient, _ id: String) throws -> BlockingPromiseClient.Record {
        try E2E.record(client.call("get", ["id": .string(id)]))
    }

    private func wait(_ client: BlockingPromiseClient, _ id: String, timeoutMs: Int = 5000) throws -> BlockingPromiseClient.Record {
        try E2E.record(client.call("wait", ["id": .string(id), "timeoutMs": .int(timeoutMs)]))
    }

    @Test("settled promises come back with the same records: values, reasons, cancellation, names, children")
    func settledRecordsSurvive() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            let value: JSONValue = ["text": "ünïcødé ✓ \"quoted\"\n", "n": 42, "x": 2.5, "list": [1, nil, true, ["deep": []]]]
            try client.call("create", ["id": "fulfilled", "name": "the fulfilled one"])
            try client.call("resolve", ["id": "fulfilled", "value": value])
            try client.call("create", ["id": "rejected"])
            try client.call("reject", ["id": "rejected", "reason": ["code": 7, "message": "went wrong", "data": ["why": [1, 2]]]])
            try client.call("create", ["id": "cancelled"])
            try client.call("then", ["id": "cancelled", "childId": "cancelled/child"])
            try client.call("cancel", ["id": "cancelled"])
            try client.call("create", ["id": "null-valued"])
            try client.call("resolve", ["id": "null-valued"])
            let ids = ["fulfilled", "rejected", "cancelled", "cancelled/child", "null-valued"]
            let before = try ids.map { try get(client, $0) }
            client.close()

            try daemon.restart()
            let after = try daemon.client()
            for record in before {
                let restored = try get(after, record.id)
                #expect(restored.json == record.json, "\(record.id) before: \(record.json)\nafter: \(restored.json)")
            }
            #expect(try get(after, "fulfilled").value == value)
            #expect(try get(after, "cancelled/child").state == .cancelled)
            let error = #expect(throws: RPCError.self) { try after.call("resolve", ["id": "rejected", "value": 1]) }
            #expect(error?.code == .alreadySettled)
        }
    }

    @Test("a pending promise is pending after a restart, and can be waited for and resolved")
    func pendingSurvives() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "job", "name": "a job"])
            client.close()

            try daemon.restart()
            let waiter = try daemon.client()
            let settler = try daemon.client()
            let record = try get(waiter, "job")
            #expect(record.state == .pending)
            #expect(record.json["name"] == "a job")
            let waitID = try waiter.send("wait", ["id": "job", "timeoutMs": 5000])
            Thread.sleep(forTimeInterval: 0.05)
            try settler.call("resolve", ["id": "job", "value": ["done": true]])
            let settled = try E2E.record(waiter.result(for: waitID))
            #expect(settled.state == .fulfilled)
            #expect(settled.value == ["done": true])
        }
    }

    @Test("a then child is re-armed: resolving its parent after the restart settles it")
    func thenChildReArmed() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "parent"])
            try client.call("then", ["id": "parent", "childId": "child"])
            try client.call("then", ["id": "child", "childId": "grandchild"])
            try client.call("then", ["id": "parent", "childId": "on-rejected", "on": "rejected"])
            client.close()

            try daemon.restart()
            let after = try daemon.client()
            let child = try get(after, "child")
            #expect(child.state == .pending)
            #expect(child.parent == "parent")
            #expect(try get(after, "grandchild").parent == "child")
            try after.call("resolve", ["id": "parent", "value": "v1"])
            #expect(try wait(after, "child").value == "v1")
            #expect(try wait(after, "grandchild").value == "v1")
            let skipped = try wait(after, "on-rejected")
            #expect(skipped.state == .fulfilled, "\(skipped.json)")
            #expect(skipped.value == "v1")
        }
    }

    @Test("combinators are re-armed: all, any, race and allSettled over inputs pending at the restart")
    func combinatorsReArmed() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            for id in ["a", "b", "c"] { try client.call("create", ["id": .string(id)]) }
            try client.call("all", ["ids": ["a", "b"], "id": "all"])
            try client.call("any", ["ids": ["b", "c"], "id": "any"])
            try client.call("race", ["ids": ["a", "c"], "id": "race"])
            try client.call("allSettled", ["ids": ["a", "b", "c"], "id": "settled"])
            try client.call("resolve", ["id": "c", "value": "c-before"])
            client.close()

            try daemon.restart()
            let after = try daemon.client()
            #expect(try get(after, "all").state == .pending)
            #expect(try get(after, "any").value == "c-before")
            #expect(try get(after, "race").value == "c-before")
            #expect(try get(after, "settled").state == .pending)
            #expect(try get(after, "all").json["inputs"] == ["a", "b"])
            try after.call("resolve", ["id": "a", "value": 1])
            Thread.sleep(forTimeInterval: 0.05)
            #expect(try get(after, "all").state == .pending)
            try after.call("reject", ["id": "b", "reason": "b failed"])
            let all = try wait(after, "all")
            #expect(all.state == .rejected)
            #expect(all.reasonMessage == "b failed")
            let settled = try wait(after, "settled")
            let elements = settled.value?.arrayValue ?? []
            #expect(elements.count == 3, "\(settled.json)")
            if elements.count == 3 {
                #expect(elements[0]["value"] == 1)
                #expect(elements[1]["state"] == "rejected")
                #expect(elements[2]["value"] == "c-before")
            }
        }
    }

    @Test("all over two inputs pending at the restart fulfils once both are resolved afterwards")
    func allFulfilsAfterRestart() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "x"])
            try client.call("create", ["id": "y"])
            try client.call("all", ["ids": ["x", "y"], "id": "both"])
            client.close()

            try daemon.restart()
            let after = try daemon.client()
            try after.call("resolve", ["id": "y", "value": 2])
            try after.call("resolve", ["id": "x", "value": 1])
            let both = try wait(after, "both")
            #expect(both.state == .fulfilled)
            #expect(both.value == [1, 2])
        }
    }

    @Test("a timeout is re-armed from its absolute deadline, not from the restart")
    func timeoutFromAbsoluteDeadline() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            let created = try E2E.record(client.call("create", ["id": "t", "timeoutMs": 1500]))
            let createdMs = created.json["created"]?.intValue ?? 0
            client.close()
            daemon.kill9()
            // Down for a second: a timer started afresh would fire 1.5 s after the
            // restart, at least 2.5 s after creation; the deadline is at 1.5 s.
            Thread.sleep(forTimeInterval: 1.0)
            let restartBegan = E2E.nowMilliseconds()
            try daemon.start()
            let ready = E2E.nowMilliseconds()

            let after = try daemon.client()
            let record = try wait(after, "t", timeoutMs: 5000)
            let answered = E2E.nowMilliseconds()
            #expect(record.state == .rejected)
            #expect(record.reasonCode == -32005)
            #expect(record.reason?["data"]?["timeoutMs"] == 1500)
            let settledMs = record.json["settled"]?.intValue ?? 0
            // When the start itself was slow, the deadline may have passed by the time it was ready.
            let due = max(createdMs + 1500, ready)
            let context = "created \(createdMs), restarted \(restartBegan - createdMs) ms later, ready after \(ready - restartBegan) ms, "
                + "settled at +\(settledMs - createdMs) ms, answered at +\(answered - createdMs) ms: \(record.json)"
            #expect(settledMs >= createdMs + 1450, "\(context)")
            #expect(settledMs <= due + 500, "\(context)")
            #expect(answered <= due + 1000, "\(context)")
        }
    }

    @Test("a deadline that passed while the daemon was down rejects the promise right after start")
    func deadlinePassedWhileDown() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "late", "timeoutMs": 300])
            try client.call("create", ["id": "not yet", "timeoutMs": 60_000])
            client.close()
            daemon.kill9()
            Thread.sleep(forTimeInterval: 0.6)
            try daemon.start()

            let after = try daemon.client()
            var record = try get(after, "late")
            _ = try E2E.eventually(timeout: .seconds(1)) {
                record = try get(after, "late")
                return record.state != .pending
            }
            #expect(record.state == .rejected, "\(record.json)")
            #expect(record.reasonCode == -32005)
            #expect(try get(after, "not yet").state == .pending)
        }
    }

    @Test("a pending lease promise is rejected after a restart: its holder is gone (--lease-grace 0)")
    func leaseExpiresAtRestart() throws {
        try E2EDurableDaemon.with { daemon in
            let holder = try daemon.client()
            try holder.call("create", ["id": "leased", "lease": true])
            try holder.call("create", ["id": "leased but done", "lease": true])
            try holder.call("resolve", ["id": "leased but done", "value": 5])
            try holder.call("then", ["id": "leased", "childId": "leased/child"])

            try daemon.restart(extraArguments: ["--lease-grace", "0"])
            holder.close()
            let after = try daemon.client()
            let record = try wait(after, "leased", timeoutMs: 2000)
            #expect(record.state == .rejected)
            #expect(record.reasonMessage == "lease expired: the daemon restarted", "\(record.json)")
            #expect(try get(after, "leased but done").value == 5)
            let child = try wait(after, "leased/child")
            #expect(child.state == .rejected)
            #expect(child.reasonMessage == "lease expired: the daemon restarted")
        }
    }

    @Test("progress and its message survive a restart")
    func progressSurvives() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "work"])
            try client.call("progress", ["id": "work", "progress": 0.25, "message": "first"])
            try client.call("progress", ["id": "work", "progress": 0.5, "message": "compiling"])
            client.close()

            try daemon.restart()
            let after = try daemon.client()
            let record = try get(after, "work")
            #expect(record.state == .pending)
            #expect(record.json["progress"]?.doubleValue == 0.5, "\(record.json)")
            #expect(record.json["progressMessage"] == "compiling", "\(record.json)")
            // Progress never goes backwards, also across a restart.
            let lower = try E2E.record(after.call("progress", ["id": "work", "progress": 0.1]))
            #expect(lower.json["progress"]?.doubleValue == 0.5)
        }
    }

    @Test("an exec child whose command and monitor died with the daemon (as in a reboot) is rejected, not run again")
    func runningExecNotRerun() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            let command = try daemon.startLongCommand(client)
            let (runs, pidFile) = (command.runs, command.pidFile)
            defer { E2E.killGroup(fromPIDFile: pidFile) }
            let execPID = try #require(E2E.pid(fromFile: pidFile, timeout: .seconds(10)), "the command did not start")
            let monitor = try #require(E2E.parentPID(of: execPID), "the command has no monitor")
            client.close()
            daemon.kill9()
            // Its monitor first, so that nothing writes the command's outcome.
            kill(monitor, SIGKILL)
            E2E.killGroup(fromPIDFile: pidFile)
            #expect(E2E.eventually(timeout: .seconds(5)) { !E2E.isAlive(monitor) }, "the monitor outlived kill -9")
            // Gone before the restart: one still dying then is the other path (stopped at
            // restart, LeftoverProcessGroupTests), which a loaded machine took here.
            #expect(E2E.eventually(timeout: .seconds(5)) { !E2E.isAlive(execPID) }, "the command outlived kill -9")

            try daemon.start()
            let after = try daemon.client()
            let child = try get(after, "c")
            #expect(child.state == .rejected, "\(child.json)")
            #expect(child.reasonMessage?.contains("was running when the daemon stopped") == true, "\(child.json)")
            #expect(child.parent == "p")
            Thread.sleep(forTimeInterval: 0.5)
            #expect(E2E.lines(ofFile: runs) == ["ran"], "the command ran again after the restart")
        }
    }

    @Test("an exec child whose parent was pending at the restart runs once its parent is resolved")
    func pendingExecReArmed() throws {
        try E2EDurableDaemon.with { daemon in
            let runs = daemon.directory + "/runs"
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            try client.call("then", ["id": "p", "childId": "c", "exec": ["sh", "-c", "echo ran >> \"$1\"; cat", "sh", .string(runs)]])
            client.close()

            try daemon.restart()
            let after = try daemon.client()
            #expect(try get(after, "c").state == .pending)
            #expect(E2E.lines(ofFile: runs).isEmpty)
            try after.call("resolve", ["id": "p", "value": ["n": 1]])
            let child = try wait(after, "c", timeoutMs: 10_000)
            #expect(child.state == .fulfilled, "\(child.json)")
            #expect(child.value == ["n": 1])
            #expect(E2E.lines(ofFile: runs) == ["ran"])
        }
    }

    @Test("generated ids are not reused after a restart")
    func generatedIDsNotReused() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            var before: Set<String> = []
            for _ in 0..<3 { before.insert(try E2E.record(client.call("create")).id) }
            try client.call("then", ["id": .string(before.first!)])
            client.close()

            try daemon.restart()
            let after = try daemon.client()
            for _ in 0..<3 {
                let made = try E2E.record(after.call("create"))
                #expect(!before.contains(made.id), "\(made.id) was made before the restart too")
            }
            for id in before { #expect(try get(after, id).state == .pending) }
        }
    }

    @Test("forget is durable: a forgotten promise stays forgotten after a restart, and its id can be made again")
    func forgetDurable() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "old"])
            try client.call("resolve", ["id": "old", "value": 1])
            try client.call("create", ["id": "kept"])
            try client.call("resolve", ["id": "kept", "value": 2])
            let forgotten = try client.call("forget", ["ids": ["old"]])
            #expect(forgotten["forgotten"] == 1)
            client.close()

            try daemon.restart()
            let after = try daemon.client()
            let error = #expect(throws: RPCError.self) { try after.call("get", ["id": "old"]) }
            #expect(error?.code == .noSuchPromise)
            #expect(try get(after, "kept").value == 2)
            try after.call("create", ["id": "old"])
            #expect(try get(after, "old").state == .pending)
        }
    }

    @Test("an id forgotten and made again, in one batch line or across restarts, is stored once, as made last")
    func forgottenIdMadeAgainIsStoredOnce() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "again"])
            try client.call("resolve", ["id": "again", "value": 1])
            // One line, so one transaction: the old row's deletion and the new row's write.
            let results = try client.batch([
                .init("forget", ["ids": ["again"]]),
                .init("create", ["id": "again"]),
                .init("resolve", ["id": "again", "value": 2]),
            ])
            #expect(results.allSatisfy { (try? $0.get()) != nil }, "\(results)")
            client.close()

            try daemon.restart()
            let after = try daemon.client()
            #expect(try get(after, "again").value == 2)
            try after.call("forget", ["ids": ["again"]])
            try after.call("create", ["id": "again"])
            after.close()

            try daemon.restart()
            let last = try daemon.client()
            #expect(try get(last, "again").state == .pending)
            let listed = try last.call("list")["promises"]?.arrayValue ?? []
            #expect(listed.filter { $0["id"] == "again" }.count == 1, "\(listed)")
        }
    }

    @Test("info reports the store, the counts of pending and settled promises, and commits")
    func infoReportsStore() throws {
        let daemon = try E2EDurableDaemon(storeSubpath: "not/yet/made")
        defer { daemon.remove() }
        try daemon.start(extraArguments: ["--retain", "10m"])
        let client = try daemon.client()
        let first = try client.call("info")
        #expect(FileManager.default.fileExists(atPath: daemon.databasePath), "no \(daemon.databasePath)")
        let store = first["store"]
        let location = store?["location"]?.stringValue ?? ""
        #expect(location.hasPrefix("sqlite:") && location.hasSuffix("/not/yet/made/promises.sqlite3"), "\(first)")
        #expect(store?["durable"] == true)
        #expect(store?["writable"] == true)
        #expect(store?["error"] == .null, "\(first)")
        #expect(store?["retainMs"] == 600_000)
        #expect(first["pending"] == 0)
        #expect(first["settled"] == 0)
        #expect(first["collected"] == 0)
        let commitsBefore = store?["commits"]?.intValue ?? -1
        #expect(commitsBefore >= 0, "\(first)")

        try client.call("create", ["id": "a"])
        try client.call("create", ["id": "b"])
        try client.call("resolve", ["id": "b", "value": 1])
        let second = try client.call("info")
        #expect(second["pending"] == 1)
        #expect(second["settled"] == 1)
        #expect(second["promises"] == 2)
        #expect((second["store"]?["commits"]?.intValue ?? 0) >= commitsBefore + 1, "\(second)")
        client.close()

        try daemon.restart()
        let third = try daemon.call("info")
        #expect(third["pending"] == 1)
        #expect(third["settled"] == 1)
        #expect(third["store"]?["location"]?.stringValue == location)
    }

    @Test("an in-memory daemon reports a store that is not durable")
    func infoInMemory() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            defer { client.close() }
            let info = try client.call("info")
            #expect(info["store"]?["durable"] == false, "\(info)")
            #expect(info["store"]?["location"] == "none", "\(info)")
        }
    }

    @Test("--retain accepts ms, s, m, h, d and bare seconds; the default is 24 h")
    func retainFormats() throws {
        let daemon = try E2EDurableDaemon()
        defer { daemon.remove() }
        let cases: [([String], Int)] = [
            ([], 86_400_000), (["--retain", "500ms"], 500), (["--retain", "30s"], 30_000), (["--retain", "10m"], 600_000),
            (["--retain", "24h"], 86_400_000), (["--retain", "2d"], 172_800_000), (["--retain", "45"], 45_000),
        ]
        for (arguments, expected) in cases {
            try daemon.restart(extraArguments: arguments)
            let info = try daemon.call("info")
            #expect(info["store"]?["retainMs"]?.intValue == expected, "\(arguments): \(info["store"] ?? .null)")
        }
        daemon.kill9()
        let bad = try E2ECommand.run(
            E2EBinaries.promised, ["--socket", daemon.socketPath, "--store", daemon.storeDirectory, "--retain", "soon"],
            timeout: .seconds(3))
        #expect(bad.status != 0, "--retain soon was accepted: \(bad)")
    }

    @Test("settled promises are collected from memory and disk once retained long enough; pending ones stay")
    func retentionCollects() throws {
        try E2EDurableDaemon.with(extraArguments: ["--retain", "500ms"]) { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "short-lived"])
            try client.call("resolve", ["id": "short-lived", "value": 1])
            try client.call("then", ["id": "short-lived", "childId": "short-lived/child"])
            try client.call("create", ["id": "still pending"])
            // Present while young.
            #expect(try get(client, "short-lived").value == 1)
            let gone = E2E.eventually(timeout: .seconds(10)) { (try? daemon.exists("short-lived")) == false }
            #expect(gone, "a promise settled for > 500 ms was not collected within 10 s")
            let info = try client.call("info")
            #expect((info["collected"]?.intValue ?? 0) >= 2, "\(info)")
            #expect(info["pending"] == 1, "\(info)")
            #expect(try get(client, "still pending").state == .pending)
            client.close()

            try daemon.restart(extraArguments: ["--retain", "500ms"])
            let after = try daemon.client()
            for id in ["short-lived", "short-lived/child"] {
                let error = #expect(throws: RPCError.self, "\(id) came back from disk") { try after.call("get", ["id": .string(id)]) }
                #expect(error?.code == .noSuchPromise)
            }
            #expect(try get(after, "still pending").state == .pending)
            // A promise settled long ago (by the clock) is collected right after start.
            try after.call("resolve", ["id": "still pending", "value": 2])
            after.close()
            daemon.kill9()
            Thread.sleep(forTimeInterval: 0.7)
            try daemon.start(extraArguments: ["--retain", "500ms"])
            #expect(E2E.eventually(timeout: .seconds(3)) { (try? daemon.exists("still pending")) == false })
        }
    }

    @Test("a cancelled chain stays cancelled after a restart, the whole chain")
    func cancelledChainSurvives() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "root"])
            try client.call("then", ["id": "root", "childId": "one"])
            try client.call("then", ["id": "one", "childId": "two"])
            try client.call("cancel", ["id": "root"])
            client.close()

            try daemon.restart()
            let after = try daemon.client()
            for id in ["root", "one", "two"] {
                let record = try get(after, id)
                #expect(record.state == .cancelled, "\(id): \(record.json)")
            }
        }
    }
}
