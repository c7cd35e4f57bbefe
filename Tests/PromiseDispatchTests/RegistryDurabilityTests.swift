import Foundation
import Promise
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// The registry over a store: answers held until their change is committed,
/// restarts that rebuild everything, a store that cannot write, retention.
/// Each "restart" is a second harness loading the first one's store.
@Suite("Registry durability")
struct RegistryDurabilityTests {
    /// A durable registry on a fresh store, and one connection to it.
    private func startDurable() -> (MemoryPromiseStore, RPCHarness, RPCFakePeer) {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        return (store, harness, harness.connect())
    }

    /// A registry restarted from `store` at wall-clock time `now`.
    private func restart(from store: MemoryPromiseStore, now: Int64? = nil) throws -> RPCHarness {
        let harness = RPCHarness(store: store)
        if let now { harness.registry.now = { now } }
        harness.registry.restore(try store.load())
        harness.settleStore()
        return harness
    }

    @Test("an answer is held until the change it acknowledges is committed, then sent")
    func answerWaitsForCommit() throws {
        let (store, harness, peer) = startDurable()
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"a"}}"#.utf8), from: peer)
        #expect(peer.sent.isEmpty)
        #expect(store["a"] == nil)
        harness.settleStore()
        #expect(store["a"]?.state == .pending)
        let answers = peer.takeMessages()
        #expect(answers.count == 1)
        #expect(answers.first?["result"]?["id"] == "a")
    }

    @Test("a read waits behind an uncommitted change made by another connection")
    func readWaitsBehindOtherChanges() throws {
        let harness = RPCHarness(store: MemoryPromiseStore())
        let writer = harness.connect()
        let reader = harness.connect()
        harness.call("create", ["id": "a"], from: writer)
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"id":"a","value":1}}"#.utf8), from: writer)
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":2,"method":"get","params":{"id":"a"}}"#.utf8), from: reader)
        #expect(reader.sent.isEmpty)
        harness.settleStore()
        #expect(reader.takeMessages().first?["result"]?["state"] == "fulfilled")
    }

    @Test("a wait answered later is held until the settlement it reports is committed, then sent to the waiter alone")
    func laterWaitAnswerWaitsForCommit() throws {
        let harness = RPCHarness(store: MemoryPromiseStore())
        let waiter = harness.connect()
        let settler = harness.connect()
        harness.call("create", ["id": "a"], from: settler)
        _ = settler.takeMessages()
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":"w","method":"wait","params":{"id":"a"}}"#.utf8), from: waiter)
        harness.settleStore()
        #expect(waiter.sent.isEmpty)
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":2,"method":"resolve","params":{"id":"a","value":7}}"#.utf8), from: settler)
        #expect(waiter.sent.isEmpty)
        #expect(settler.takeMessages().isEmpty)
        harness.settleStore()
        let answers = waiter.takeMessages()
        #expect(answers.map { $0["id"] } == ["w"])
        #expect(answers.first?["result"]?["state"] == "fulfilled")
        #expect(answers.first?["result"]?["value"] == 7)
        #expect(settler.takeMessages().map { $0["id"] } == [2])
    }

    @Test("everything one request line does is committed in one batch")
    func oneLineOneBatch() throws {
        let (store, harness, peer) = startDurable()
        let before = store.commitCount
        harness.sendBatch([
            ("create", ["id": "x1"]),
            ("create", ["id": "x2"]),
            ("then", ["id": "x1", "childId": "x3"]),
            ("resolve", ["id": "x1", "value": "v"]),
        ], from: peer)
        #expect(store.commitCount == before + 1)
        #expect(store["x1"]?.value == "v")
        #expect(store["x2"]?.state == .pending)
        #expect(store["x3"]?.state == .fulfilled)
        // x1's value, stored once, with x1.
        #expect(store["x3"]?.valueOfParent == true)
    }

    @Test("a promise made and forgotten in one request line is not written: its batch keeps the others")
    func promiseMadeAndForgottenInOneLineIsNotStored() throws {
        let (store, harness, peer) = startDurable()
        let before = store.commitCount
        harness.sendBatch([
            ("create", ["id": "gone"]),
            ("create", ["id": "kept"]),
            ("resolve", ["id": "gone", "value": 1]),
            ("forget", ["ids": ["gone"]]),
        ], from: peer)
        #expect(store.commitCount == before + 1)
        // Deletions are applied before upserts: a write of "gone" in the batch would have stayed.
        #expect(store["gone"] == nil)
        #expect(try store.load().promises.map(\.id) == ["kept"])
        #expect(harness.errorCode("get", ["id": "gone"], from: peer) == -32001)
    }

    @Test("a restart restores settled records exactly, and pending promises that can still be settled")
    func restartRestoresRecords() throws {
        let (store, first, peer) = startDurable()
        first.call("create", ["id": "ok", "name": "build"], from: peer)
        first.call("resolve", ["id": "ok", "value": ["n": 1, "list": [true, nil, 2.5]]], from: peer)
        first.call("create", ["id": "bad"], from: peer)
        first.call("reject", ["id": "bad", "reason": ["code": 3, "message": "failed", "data": ["why": "disk"]]], from: peer)
        first.call("create", ["id": "gone"], from: peer)
        first.call("cancel", ["id": "gone"], from: peer)
        first.call("create", ["id": "open"], from: peer)
        first.call("progress", ["id": "open", "progress": 0.25, "message": "a quarter"], from: peer)
        let before = ["ok", "bad", "gone", "open"].map { first.record($0, from: peer) }

        let second = try restart(from: store)
        let reader = second.connect()
        let after = ["ok", "bad", "gone", "open"].map { second.record($0, from: reader) }
        #expect(after == before)
        second.call("resolve", ["id": "open", "value": 9], from: reader)
        #expect(second.record("open", from: reader)["value"] == 9)
        #expect(store["open"]?.value == 9)
    }

    @Test("a restart re-arms then children and combinators over pending promises")
    func restartRearmsLinks() throws {
        let (store, first, peer) = startDurable()
        first.call("create", ["id": "a"], from: peer)
        first.call("create", ["id": "b"], from: peer)
        first.call("then", ["id": "a", "childId": "a.child"], from: peer)
        first.call("all", ["ids": ["a", "b"], "id": "both"], from: peer)
        first.call("race", ["ids": ["a", "b"], "id": "first"], from: peer)

        let second = try restart(from: store)
        let client = second.connect()
        #expect(second.record("a", from: client)["children"] == ["a.child"])
        second.call("resolve", ["id": "b", "value": "B"], from: client)
        #expect(second.state("first", from: client) == "fulfilled")
        #expect(second.state("both", from: client) == "pending")
        second.call("resolve", ["id": "a", "value": "A"], from: client)
        #expect(second.record("a.child", from: client)["value"] == "A")
        #expect(second.record("both", from: client)["value"] == ["A", "B"])
        #expect(store["both"]?.value == ["A", "B"])
    }

    @Test("cancelling a restored parent cancels its restored pending child")
    func restoredCancellationPropagates() throws {
        let (store, first, peer) = startDurable()
        first.call("create", ["id": "p"], from: peer)
        first.call("then", ["id": "p", "childId": "c"], from: peer)
        let second = try restart(from: store)
        let client = second.connect()
        second.call("cancel", ["id": "p"], from: client)
        #expect(second.state("c", from: client) == "cancelled")
        #expect(store["c"]?.state == .cancelled)
    }

    @Test("a timeout runs to its absolute deadline across a restart, and one already past rejects at once")
    func timeoutsKeepTheirDeadlines() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        first.registry.now = { 1_000_000 }
        let peer = first.connect()
        first.call("create", ["id": "soon", "timeoutMs": 1000], from: peer)
        first.call("create", ["id": "past", "timeoutMs": 100], from: peer)

        let second = try restart(from: store, now: 1_000_600)
        let client = second.connect()
        second.loop.advance(by: 0)
        second.settleStore()
        #expect(second.record("past", from: client)["reason"]?["code"] == -32005)
        second.loop.advance(by: 399)
        #expect(second.state("soon", from: client) == "pending")
        second.loop.advance(by: 1)
        second.settleStore()
        let soon = second.record("soon", from: client)
        #expect(soon["reason"]?["code"] == -32005)
        #expect(soon["reason"]?["message"] == "timed out after 1000 ms")
        #expect(store["soon"]?.state == .rejected)
    }

    @Test("a leased pending promise is rejected at restart: its connection is gone")
    func leaseEndsAtRestart() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        first.call("create", ["id": "held", "lease": true], from: first.connect())
        let second = try restart(from: store)
        let record = second.record("held", from: second.connect())
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["message"] == "lease expired: the daemon restarted")
        #expect(store["held"]?.state == .rejected)
    }

    @Test("an exec command starts only once its start is stored, and is not run again after a restart")
    func execStartIsWrittenAhead() throws {
        let (store, first, peer) = startDurable()
        first.call("create", ["id": "src"], from: peer)
        first.call("then", ["id": "src", "childId": "job", "exec": ["make", "all"]], from: peer)
        first.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":9,"method":"resolve","params":{"id":"src","value":1}}"#.utf8), from: peer)
        #expect(first.loop.processes.isEmpty)
        first.settleStore()
        #expect(first.loop.processes.count == 1)
        #expect(store["job"]?.execStarted == true)

        let second = try restart(from: store)
        second.loop.advance(by: 0)
        #expect(second.loop.processes.isEmpty)
        let record = second.record("job", from: second.connect())
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["message"] == "not run again: its command was running when the daemon stopped")
        #expect(record["reason"]?["data"]?["exec"] == ["make", "all"])
    }

    @Test("a then child is stored with its link and its command: on, exec, cwd, env, and whether it started")
    func thenChildIsStoredWithItsCommand() throws {
        let (store, harness, peer) = startDurable()
        harness.call("create", ["id": "src"], from: peer)
        harness.call(
            "then",
            ["id": "src", "childId": "job", "on": "rejected", "exec": ["make", "lib"], "cwd": "/src",
             "env": ["MODE": "fast"]],
            from: peer)
        let stored = try #require(store["job"])
        #expect(stored.kind == .then)
        #expect(stored.parentID == "src")
        #expect(stored.on == .rejected)
        #expect(stored.exec == ["make", "lib"])
        #expect(stored.cwd == "/src")
        #expect(stored.env == ["MODE": "fast"])
        #expect(stored.execStarted == false)
        #expect(stored.state == .pending)
        #expect(stored.value == nil && stored.reason == nil)
        harness.call("reject", ["id": "src", "reason": ["message": "red"]], from: peer)
        #expect(store["job"]?.execStarted == true)
        #expect(store["src"]?.reason?["message"] == "red")
        #expect(store["src"]?.state == .rejected)
    }

    @Test("an exec child whose parent was pending at the restart runs when the parent settles")
    func pendingExecChildIsRearmed() throws {
        let (store, first, peer) = startDurable()
        first.call("create", ["id": "src"], from: peer)
        first.call("then", ["id": "src", "childId": "job", "exec": ["cat"]], from: peer)
        let second = try restart(from: store)
        let client = second.connect()
        second.call("resolve", ["id": "src", "value": 5], from: client)
        #expect(second.loop.processes.map(\.spec.argv) == [["cat"]])
        second.loop.processes.first?.exit(0, stdout: "6\n")
        second.settleStore()
        #expect(second.record("job", from: client)["value"] == 6)
        #expect(store["job"]?.value == 6)
    }

    @Test("daemon-made ids are not reused after a restart")
    func generatedIDsContinue() throws {
        let (store, first, peer) = startDurable()
        let ids = (0..<3).map { _ in first.call("create", from: peer)["id"] }
        let second = try restart(from: store)
        let next = second.call("create", from: second.connect())["id"]
        #expect(ids == ["p1", "p2", "p3"])
        #expect(next == "p4")
    }

    @Test("a store that cannot write: the change's answer is -32603, reads still answer, changes are refused until a retry succeeds")
    func failingStore() throws {
        let (store, harness, peer) = startDurable()
        harness.call("create", ["id": "kept"], from: peer)
        store.failCommits = PromiseStoreError("disk full")

        let refused = harness.answer("create", ["id": "lost"], from: peer)
        #expect(refused["error"]?["code"] == -32603)
        #expect(refused["error"]?["message"] == "the store cannot write: disk full")
        #expect(refused["error"]?["data"] == ["reason": "disk full", "store": "memory"])
        #expect(store["lost"] == nil)
        #expect(harness.errorCode("resolve", ["id": "kept", "value": 1], from: peer) == -32603)
        #expect(harness.state("kept", from: peer) == "pending")
        let info = harness.call("info", from: peer)
        #expect(info["store"]?["writable"] == false)
        #expect(info["store"]?["error"] == "disk full")

        store.failCommits = nil
        harness.loop.advance(by: GroupCommit.retryMilliseconds)
        harness.settleStore()
        #expect(store["lost"]?.state == .pending)
        #expect(harness.call("info", from: peer)["store"]?["writable"] == true)
        harness.call("resolve", ["id": "kept", "value": 1], from: peer)
        #expect(store["kept"]?.value == 1)
    }

    @Test("a forget whose batch cannot be stored is answered -32603, and its deletion is written by the retry")
    func failedDeletionIsRetried() throws {
        let (store, harness, peer) = startDurable()
        harness.call("create", ["id": "done"], from: peer)
        harness.call("resolve", ["id": "done", "value": 1], from: peer)
        store.failCommits = PromiseStoreError("disk full")

        #expect(harness.errorCode("forget", ["ids": ["done"]], from: peer) == -32603)
        #expect(store["done"]?.value == 1)

        store.failCommits = nil
        harness.loop.advance(by: GroupCommit.retryMilliseconds)
        harness.settleStore()
        #expect(store["done"] == nil)
        #expect(try store.load().promises.isEmpty)
    }

    @Test("a batch whose changes cannot be stored: every successful answer in it becomes -32603, error answers stay")
    func failingStoreBatch() throws {
        let (store, harness, peer) = startDurable()
        harness.call("create", ["id": "kept"], from: peer)
        store.failCommits = PromiseStoreError("disk full")
        harness.send(#"[{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"lost"}},"#
            + #"{"jsonrpc":"2.0","id":2,"method":"get","params":{"id":"kept"}},"#
            + #"{"jsonrpc":"2.0","id":3,"method":"get","params":{"id":"missing"}},"#
            + #"{"jsonrpc":"2.0","id":4,"method":"then","params":{"id":"kept","childId":"child"}}]"#, from: peer)
        let answers = try #require(peer.takeMessages().last?.arrayValue)
        #expect(answers.map { $0["id"] } == [1, 2, 3, 4])
        #expect(answers[0]["error"]?["code"] == -32603)
        #expect(answers[1]["error"]?["code"] == -32603)
        #expect(answers[2]["error"]?["code"] == -32001)
        // A result that is not a record (then's) is refused the same way.
        #expect(answers[3]["error"]?["code"] == -32603)
        #expect(answers.allSatisfy { $0["result"] == nil })
        #expect(store["lost"] == nil)
    }

    @Test("settled promises are collected from memory and the store once the retention period has passed")
    func retention() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        var now: Int64 = 5_000
        harness.registry.now = { now }
        harness.registry.retain(forMilliseconds: 1000)
        let peer = harness.connect()
        harness.call("create", ["id": "done"], from: peer)
        harness.call("resolve", ["id": "done", "value": 1], from: peer)
        harness.call("create", ["id": "waiting"], from: peer)
        now += 999
        harness.loop.advance(by: 500)
        harness.settleStore()
        #expect(harness.state("done", from: peer) == "fulfilled")
        now += 1
        harness.loop.advance(by: 500)
        harness.settleStore()
        #expect(harness.errorCode("get", ["id": "done"], from: peer) == -32001)
        #expect(store["done"] == nil)
        #expect(store["waiting"] != nil)
        let info = harness.call("info", from: peer)
        #expect(info["collected"] == 1)
        #expect(info["pending"] == 1)
        #expect(info["settled"] == 0)
    }

    @Test("stopping rejects a running command with the restart reason and stores it before finishing")
    func stopRejectsRunningCommands() throws {
        let (store, harness, peer) = startDurable()
        harness.call("create", ["id": "src"], from: peer)
        harness.call("then", ["id": "src", "childId": "job", "exec": ["sleep", "30"]], from: peer)
        harness.call("resolve", ["id": "src", "value": 1], from: peer)
        var stopped = false
        harness.dispatcher.stop { stopped = true }
        #expect(!stopped)
        harness.settleStore()
        #expect(stopped)
        #expect(store["job"]?.state == .rejected)
        #expect(store["job"]?.reason?["message"] == "not run again: its command was running when the daemon stopped")
    }
}

extension RegistryDurabilityTests {
    @Test("at maxPromises, the oldest settled promises make room before their retention ends; pending ones never do")
    func settledPromisesMakeRoom() throws {
        var limits = DaemonLimits()
        limits.maxPromises = 200
        let store = MemoryPromiseStore()
        let harness = RPCHarness(limits: limits, store: store)
        harness.registry.retain(forMilliseconds: 3_600_000)
        let peer = harness.connect()
        for index in 0..<150 {
            harness.call("create", ["id": .string("done\(index)")], from: peer)
            harness.call("resolve", ["id": .string("done\(index)"), "value": .int(index)], from: peer)
        }
        for index in 0..<50 { harness.call("create", ["id": .string("open\(index)")], from: peer) }
        harness.call("create", ["id": "new"], from: peer)
        // Room for the new one and a hundredth of the limit: the 3 oldest settled ones went.
        #expect(harness.errorCode("get", ["id": "done0"], from: peer) == -32001)
        #expect(harness.errorCode("get", ["id": "done2"], from: peer) == -32001)
        #expect(harness.state("done3", from: peer) == "fulfilled")
        #expect(store["done0"] == nil)
        #expect(harness.call("info", from: peer)["collected"] == 3)
        for index in 0..<50 { #expect(harness.state("open\(index)", from: peer) == "pending") }

        for index in 3..<150 { harness.call("forget", ["ids": [.string("done\(index)")]], from: peer) }
        for index in 50..<199 { harness.call("create", ["id": .string("open\(index)")], from: peer) }
        #expect(harness.errorCode("create", ["id": "one-too-many"], from: peer) == -32004)
    }
}

extension RegistryDurabilityTests {
    @Test("a connection that closes while its answer waits for the store is sent nothing, and the change is still stored")
    func closedWhileAnswerHeld() {
        let (store, harness, peer) = startDurable()
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"a"}}"#.utf8), from: peer)
        harness.close(peer)
        harness.settleStore()
        #expect(peer.sent.isEmpty)
        #expect(store["a"]?.state == .pending)
    }

    @Test("an exec child cancelled while its start is being stored never starts its command")
    func cancelledWhileStartIsStored() {
        let (store, harness, peer) = startDurable()
        harness.call("create", ["id": "src"], from: peer)
        harness.call("then", ["id": "src", "childId": "job", "exec": ["make"]], from: peer)
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":8,"method":"resolve","params":{"id":"src","value":1}}"#.utf8), from: peer)
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":9,"method":"cancel","params":{"id":"job"}}"#.utf8), from: peer)
        harness.settleStore()
        #expect(harness.loop.processes.isEmpty)
        #expect(harness.state("job", from: peer) == "cancelled")
        #expect(harness.call("info", from: peer)["runningProcesses"] == 0)
        #expect(store["job"]?.state == .cancelled)
    }

    @Test("a stored child whose parent, or combinator whose input, is no longer stored is rejected at restart, saying which")
    func missingLinksAreRejectedAtRestart() throws {
        let store = MemoryPromiseStore([
            StoredPromise(id: "x", sequence: 0, kind: .created, created: 1),
            StoredPromise(id: "child", sequence: 1, kind: .then, parentID: "gone", on: .fulfilled, created: 1),
            StoredPromise(id: "both", sequence: 2, kind: .combinator(.all), inputIDs: ["x", "gone2"], policy: .failFast, created: 1),
        ])
        let harness = try restart(from: store)
        let peer = harness.connect()
        let child = harness.record("child", from: peer)
        #expect(child["state"] == "rejected")
        #expect(child["reason"]?["message"] == #"cannot be restored: its parent "gone" is no longer stored"#)
        let both = harness.record("both", from: peer)
        #expect(both["state"] == "rejected")
        #expect(both["reason"]?["message"] == #"cannot be restored: its input "gone2" is no longer stored"#)
        #expect(harness.state("x", from: peer) == "pending")
        #expect(store["child"]?.state == .rejected)
        #expect(store["both"]?.state == .rejected)
    }
}
