import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Limits that fit real use (issue 22, item 7), against a real `promised`
/// with a small connection table: the reserve that keeps a full daemon
/// able to release its waiters, the daemon's reason reaching the user of
/// `promisectl`, the open-file limit the table is sized from, and the
/// daemon-wide caps on waits and subscriptions for ids not created yet.
@Suite("limits that fit real use")
struct ConnectionLimitTests {
    /// Opens `count` raw connections into the table proper, each shown
    /// served by an answer (so none is still in the backlog). One let into
    /// the reserve while the harness's probe client was still counted is
    /// opened again.
    private func fill(_ daemon: E2EDaemon, with count: Int) throws -> [E2ERawConnection] {
        var opened: [E2ERawConnection] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while opened.count < count && ContinuousClock.now < deadline {
            let raw = try E2ERawConnection(path: daemon.socketPath)
            // Only a connection in the table proper may subscribe: not one let
            // into the reserve while the probe still counted.
            raw.writeLine(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"ids":["fill"]}}"#)
            if try raw.readMessage()?["result"] != nil {
                opened.append(raw)
            } else {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        try #require(opened.count == count)
        return opened
    }

    /// A client in the table proper (one let into the reserve while the
    /// harness's probe still counted cannot subscribe, and is replaced).
    private func tableClient(_ daemon: E2EDaemon) throws -> BlockingPromiseClient {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let client = try daemon.client()
            if (try? client.call("subscribe", ["ids": ["table"]])) != nil { return client }
            client.close()
            guard ContinuousClock.now < deadline else { throw E2EHarnessError("no room in the table") }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Polls `info` on `client` until the daemon counts `count` connections.
    private func awaitConnections(_ count: Int, _ client: BlockingPromiseClient) -> Bool {
        E2E.eventually { (try? client.call("info")["connections"]?.intValue) == count }
    }

    @Test("with the table full, promisectl prints the daemon's -32004 too many connections and exits 69")
    func refusedClientPrintsDaemonReason() throws {
        try E2EDaemon.with(extraArguments: ["--max-connections", "1", "--reserved-connections", "0"]) { daemon in
            let held = try fill(daemon, with: 1)
            let result = try daemon.ctl("get", "x")
            #expect(result.status == 69, "\(result)")
            #expect(result.stderr == "promisectl: too many connections (limit 1); try again when other clients have closed\n", "\(result)")
            withExtendedLifetime(held) {}
        }
    }

    @Test("with the table full of waiters, a promisectl resolve in the reserve releases them; a wait there exits 69")
    func reserveServesSettlingClients() throws {
        try E2EDaemon.with(extraArguments: ["--max-connections", "3", "--reserved-connections", "3"]) { daemon in
            // Three waiters fill the table, in the order they connect (the
            // first once the harness's probe has gone); a watcher is in the reserve.
            let first = try tableClient(daemon)
            #expect(awaitConnections(1, first))
            let waiters = [first, try daemon.client(), try daemon.client()]
            let waits = try waiters.map { try $0.send("wait", ["id": "w"]) }
            let watcher = try daemon.client()
            #expect(awaitConnections(4, watcher))

            let refusedWait = try daemon.ctl("wait", "w", "--timeout", "5")
            #expect(refusedWait.status == 69, "\(refusedWait)")
            #expect(refusedWait.stderr.contains("too many connections (limit 3)"), "\(refusedWait)")
            #expect(refusedWait.stderr.contains("cannot wait"), "\(refusedWait)")

            let created = try daemon.ctl("create", "w")
            #expect(created.status == 0, "\(created)")
            let resolved = try daemon.ctl("resolve", "w", "42")
            #expect(resolved.status == 0, "\(resolved)")
            for (waiter, id) in zip(waiters, waits) {
                #expect(try waiter.result(for: id)["value"] == 42)
            }
        }
    }

    @Test("a reserved connection may wait for a promise already settled and may not subscribe, which closes it")
    func reserveAnswersSettledWaitsAndRefusesSubscribe() throws {
        try E2EDaemon.with(extraArguments: ["--max-connections", "1", "--reserved-connections", "1"]) { daemon in
            let held = try fill(daemon, with: 1)
            let reserved = try daemon.client()
            try reserved.call("create", ["id": "done"])
            try reserved.call("resolve", ["id": "done", "value": 1])
            #expect(try reserved.call("wait", ["id": "done"])["value"] == 1)
            let error = #expect(throws: RPCError.self) { try reserved.call("subscribe", ["ids": ["done"]]) }
            #expect(error?.code == .limitExceeded)
            #expect(error?.data?["limit"] == "maxConnections")
            #expect(error?.data?["reserved"] == true)
            // Refused, it gives its place in the reserve up: a client that stays takes it.
            #expect(throws: PromiseClientError.self) { try reserved.call("info") }
            let next = try daemon.client()
            #expect(E2E.eventually { (try? next.call("info")) != nil })
            // Past the reserve too: refused with the daemon's reason, not a bare end of stream.
            let refused = #expect(throws: RPCError.self) { try daemon.client().call("info") }
            #expect(refused?.message == "too many connections (limit 1)")
            withExtendedLifetime((held, next)) {}
        }
    }

    @Test("waits and subscriptions for ids not created yet are capped daemon-wide, freed by creation and by closing")
    func uncreatedWatchesCappedDaemonWide() throws {
        try E2EDaemon.with(extraArguments: [
            "--max-waiters-for-uncreated-ids", "2", "--max-subscriptions-to-uncreated-ids", "3",
        ]) { daemon in
            let first = try daemon.client()
            let second = try daemon.client()
            let limits = try first.call("info")["limits"]
            #expect(limits?["maxWaitersForUncreatedIDs"] == 2)
            #expect(limits?["maxSubscriptionsToUncreatedIDs"] == 3)
            #expect(limits?["reservedConnections"] == 64)

            _ = try first.send("wait", ["id": "a"])
            _ = try second.send("wait", ["id": "b"])
            try first.call("info")  // both waits are in
            let waitError = #expect(throws: RPCError.self) { try second.call("wait", ["id": "c"]) }
            #expect(waitError?.code == .limitExceeded)
            #expect(waitError?.data?["limit"] == "maxWaitersForUncreatedIDs")
            #expect(waitError?.data?["value"] == 2)
            // A promise that exists does not count.
            try first.call("create", ["id": "exists"])
            _ = try second.send("wait", ["id": "exists"])
            // Creating "a" moves its wait out of the count.
            try first.call("create", ["id": "a"])
            _ = try second.send("wait", ["id": "c"])
            try second.call("info")

            #expect(try first.call("subscribe", ["ids": ["x", "y", "exists"]])["subscribed"] == 3)
            let subscribeError = #expect(throws: RPCError.self) { try second.call("subscribe", ["ids": ["z", "w"]]) }
            #expect(subscribeError?.data?["limit"] == "maxSubscriptionsToUncreatedIDs")
            #expect(subscribeError?.data?["value"] == 3)
            // Closing a connection frees what it held.
            first.close()
            let deadline = ContinuousClock.now + .seconds(5)
            var subscribed: JSONValue?
            while subscribed == nil && ContinuousClock.now < deadline {
                subscribed = try? second.call("subscribe", ["ids": ["z", "w", "v"]])
                if subscribed == nil { Thread.sleep(forTimeInterval: 0.01) }
            }
            #expect(subscribed?["subscribed"] == 3)
        }
    }

    @Test("the daemon raises its open-file soft limit to the hard limit and sizes its connection table from it")
    func openFileLimitRaisedAndTableSized() throws {
        // prlimit's soft 256, hard 2048: the daemon raises soft to 2048 and keeps room beside
        // its clients for 64 fixed descriptors, 4 per process (256 by default, but at most a
        // quarter of the 1,984 not fixed: 496) and the reserve (64).
        let directory = try E2ETemporaryFolder()
        let socket = directory.path + "/s.sock"
        let daemon = try E2ECommand.start(
            "/usr/bin/prlimit", ["--nofile=256:2048", E2EBinaries.promised, "--in-memory", "--socket", socket])
        defer {
            kill(daemon.pid, SIGTERM)
            _ = try? daemon.finish(timeout: .seconds(10))
        }
        var client: BlockingPromiseClient?
        let deadline = ContinuousClock.now + .seconds(10)
        while client == nil && ContinuousClock.now < deadline {
            client = try? BlockingPromiseClient(socketPath: socket, timeout: .seconds(5))
            if client == nil { Thread.sleep(forTimeInterval: 0.01) }
        }
        let limits = try #require(client).call("info")["limits"]
        #expect(limits?["maxConnections"] == .int(2048 - 64 - 496 - 64))
        let limit = try String(contentsOfFile: "/proc/\(daemon.pid)/limits", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("Max open files") }
        #expect(limit?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).prefix(2) == ["2048", "2048"],
                "\(String(describing: limit))")
    }

    @Test("a then exec step that finds no free file descriptor starts once clients leave, instead of failing for good")
    func execRetriedWhenOutOfDescriptors() throws {
        // Soft and hard limit 48: nothing to raise. Idle clients take every descriptor left.
        let folder = try E2ETemporaryFolder()
        let socket = folder.path + "/s.sock"
        let daemon = try E2ECommand.start("/usr/bin/prlimit", [
            "--nofile=48:48", E2EBinaries.promised, "--in-memory", "--socket", socket,
            "--max-connections", "1000", "--reserved-connections", "0",
        ])
        defer {
            kill(daemon.pid, SIGTERM)
            _ = try? daemon.finish(timeout: .seconds(10))
        }
        var client: BlockingPromiseClient?
        let deadline = ContinuousClock.now + .seconds(10)
        while client == nil && ContinuousClock.now < deadline {
            client = try? BlockingPromiseClient(socketPath: socket, timeout: .seconds(10))
            if client == nil { Thread.sleep(forTimeInterval: 0.01) }
        }
        let control = try #require(client)
        try control.call("create", ["id": "input"])
        try control.call("resolve", ["id": "input", "value": 1])

        var idle: [E2ERawConnection] = []
        while idle.count < 100 {
            let raw = try E2ERawConnection(path: socket)
            raw.writeLine(#"{"jsonrpc":"2.0","id":1,"method":"info","params":{}}"#)
            guard try raw.readMessage(timeout: .seconds(2)) != nil else { break }  // accepted and closed: no descriptor left
            idle.append(raw)
        }
        #expect(idle.count < 100, "the daemon never ran out of descriptors")

        try control.call("then", ["id": "input", "childId": "step", "exec": ["echo", "\"ran\""]])
        Thread.sleep(forTimeInterval: 0.1)
        #expect(try control.call("get", ["id": "step"])["state"] == "pending")
        idle.removeLast(min(12, idle.count))
        let step = try E2E.record(control.call("wait", ["id": "step", "timeoutMs": 5_000]))
        #expect(step.state == .fulfilled, "\(step)")
        #expect(step.value == "ran")
    }
}
