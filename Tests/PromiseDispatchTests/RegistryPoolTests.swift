import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseDispatch
import PromiseRegistry
import PromiseStore
import PromiseTestSupport
import Testing

/// Pools: `then … exec` steps and `pool.acquire` callers past a pool's limit
/// wait their turn, first come first served, instead of being refused.
@Suite("Registry: pools")
struct RegistryPoolTests {
    /// Limits with a default pool of `defaultLimit` and the pools `pools`.
    private func limits(default defaultLimit: Int = 256, pools: [String: Int] = [:], maxQueued: Int? = nil)
        -> DaemonLimits
    {
        var limits = DaemonLimits()
        limits.maxRunningProcesses = defaultLimit
        limits.pools = pools
        if let maxQueued { limits.maxQueued = maxQueued }
        return limits
    }

    /// A pending parent "a" and exec children `ids` of it, in that order, in `pool` (default when nil).
    private func steps(_ ids: [String], pool: String? = nil, harness: RPCHarness, peer: RPCFakePeer) {
        if harness.answer("get", ["id": "a"], from: peer)["error"] != nil {
            harness.call("create", ["id": "a"], from: peer)
        }
        for id in ids {
            var params: JSONValue = ["id": "a", "childId": .string(id), "exec": ["run", .string(id)]]
            if let pool { params = params.merging(["pool": .string(pool)]) }
            harness.call("then", params, from: peer)
        }
    }

    /// The ids of the commands started so far, in the order they started.
    private func started(_ harness: RPCHarness) -> [String] {
        harness.loop.processes.map { $0.spec.argv.last ?? "" }
    }

    private func process(_ id: String, _ harness: RPCHarness) throws -> RPCFakeLoop.Process {
        try #require(harness.loop.processes.first { $0.spec.argv.last == id && !$0.hasExited })
    }

    private func pool(_ name: String, _ harness: RPCHarness, _ peer: RPCFakePeer) -> JSONValue {
        harness.call("info", from: peer)["pools"]?[name] ?? .null
    }

    @Test("steps past the default pool's limit wait, marked queued, and start in order as slots free up")
    func queuedStepsStartInOrder() throws {
        let harness = RPCHarness(limits: limits(default: 1))
        let peer = harness.connect()
        steps(["s1", "s2", "s3"], harness: harness, peer: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(started(harness) == ["s1"])
        #expect(harness.record("s1", from: peer)["queued"] == nil)
        #expect(harness.record("s2", from: peer)["queued"] == true)
        #expect(harness.record("s2", from: peer)["state"] == "pending")
        #expect(harness.record("s3", from: peer)["pool"] == "default")
        #expect(pool("default", harness, peer) == [
            "limit": 1, "running": 1, "queued": 2, "holders": [["step": "s1"]],
            "waiting": [["step": "s2"], ["step": "s3"]],
        ])
        try process("s1", harness).exit(0, stdout: "1")
        #expect(started(harness) == ["s1", "s2"])
        #expect(harness.record("s2", from: peer)["queued"] == nil)
        // However a command ends, its slot goes to the next one.
        try process("s2", harness).exit(3, stderr: "failed")
        #expect(started(harness) == ["s1", "s2", "s3"])
        try process("s3", harness).exit(0)
        #expect(harness.record("s2", from: peer)["state"] == "rejected")
        #expect(harness.record("s3", from: peer)["state"] == "fulfilled")
        #expect(pool("default", harness, peer)["running"] == 0)
        #expect(harness.call("info", from: peer)["runningProcesses"] == 0)
    }

    @Test("a running step that is cancelled keeps its slot until its process has exited, then the next one starts")
    func cancelledRunningStepFreesSlotOnExit() throws {
        let harness = RPCHarness(limits: limits(pools: ["cc": 1]))
        let peer = harness.connect()
        steps(["s1", "s2"], pool: "cc", harness: harness, peer: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        harness.call("cancel", ["id": "s1"], from: peer)
        #expect(try process("s1", harness).terminations == [harness.limits.killGraceMilliseconds])
        #expect(started(harness) == ["s1"], "the process still runs: its slot is still held")
        try process("s1", harness).exit(0, signal: 15)
        #expect(started(harness) == ["s1", "s2"])
        #expect(harness.record("s1", from: peer)["state"] == "cancelled")
    }

    @Test("a command that cannot start gives its slot to the next step")
    func launchFailureFreesSlot() throws {
        let harness = RPCHarness(limits: limits(pools: ["cc": 1]))
        let peer = harness.connect()
        steps(["s1", "s2"], pool: "cc", harness: harness, peer: peer)
        harness.loop.launchError = RPCFakeLoop.LaunchFailure()
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(harness.record("s1", from: peer)["reason"]?["code"] == 127)
        #expect(harness.record("s2", from: peer)["reason"]?["code"] == 127)
        #expect(pool("cc", harness, peer)["running"] == 0)
        #expect(pool("cc", harness, peer)["queued"] == 0)
    }

    @Test("cancelling a queued step takes it out of the queue: it never starts, the next one does")
    func cancelQueuedStep() throws {
        let harness = RPCHarness(limits: limits(pools: ["cc": 1]))
        let peer = harness.connect()
        steps(["s1", "s2", "s3"], pool: "cc", harness: harness, peer: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        harness.call("cancel", ["id": "s2"], from: peer)
        #expect(harness.record("s2", from: peer)["state"] == "cancelled")
        #expect(harness.record("s2", from: peer)["queued"] == nil)
        #expect(pool("cc", harness, peer)["queued"] == 1)
        #expect(pool("cc", harness, peer)["waiting"] == [["step": "s3"]])
        try process("s1", harness).exit(0)
        #expect(started(harness) == ["s1", "s3"])
    }

    @Test("cancelling the settled parent of queued steps cancels them and takes them out of the queue")
    func cancelParentOfQueuedSteps() throws {
        let harness = RPCHarness(limits: limits(pools: ["cc": 1]))
        let peer = harness.connect()
        steps(["s1", "s2", "s3"], pool: "cc", harness: harness, peer: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        _ = harness.answer("cancel", ["id": "a"], from: peer)
        #expect(harness.record("s2", from: peer)["state"] == "cancelled")
        #expect(harness.record("s3", from: peer)["state"] == "cancelled")
        #expect(pool("cc", harness, peer)["queued"] == 0)
        #expect(try process("s1", harness).terminations.count == 1)
        try process("s1", harness).exit(0, signal: 15)
        #expect(started(harness) == ["s1"])
    }

    @Test("pools are apart: a full pool does not hold up steps of another")
    func poolsAreApart() throws {
        let harness = RPCHarness(limits: limits(default: 5, pools: ["cc": 1, "ld": 1]))
        let peer = harness.connect()
        steps(["c1", "c2"], pool: "cc", harness: harness, peer: peer)
        steps(["l1"], pool: "ld", harness: harness, peer: peer)
        steps(["d1"], harness: harness, peer: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(Set(started(harness)) == ["c1", "l1", "d1"])
        #expect(harness.record("c2", from: peer)["pool"] == "cc")
        #expect(harness.record("c2", from: peer)["queued"] == true)
    }

    @Test("then refuses an unknown pool, a pool without exec and a malformed pool name with -32602 naming the param",
          arguments: [
              (["id": "a", "exec": ["true"], "pool": "nope"], "pool"),
              (["id": "a", "pool": "cc"], "pool"),
              (["id": "a", "exec": ["true"], "pool": "c c"], "pool"),
              (["id": "a", "exec": ["true"], "pool": 3], "pool"),
          ] as [(JSONValue, String)])
    func thenRefusesBadPool(params: JSONValue, param: String) {
        let harness = RPCHarness(limits: limits(pools: ["cc": 1]))
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        let answer = harness.answer("then", params, from: peer)
        #expect(answer["error"]?["code"] == -32602)
        #expect(answer["error"]?["data"]?["param"] == .string(param))
        #expect(harness.registry.count == 1)
    }

    @Test("pool.set makes a pool, and raising its limit starts what waited; lowering it stops nothing; 0 pauses it")
    func poolSet() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        #expect(harness.call("pool.set", ["pool": "cc", "limit": 0], from: peer)
            == ["pool": "cc", "limit": 0, "running": 0, "queued": 0])
        steps(["s1", "s2", "s3"], pool: "cc", harness: harness, peer: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(started(harness).isEmpty)
        #expect(harness.call("pool.set", ["pool": "cc", "limit": 2], from: peer)["running"] == 2)
        #expect(started(harness) == ["s1", "s2"])
        harness.call("pool.set", ["pool": "cc", "limit": 1], from: peer)
        #expect(harness.loop.processes.allSatisfy { $0.terminations.isEmpty })
        try process("s1", harness).exit(0)
        #expect(started(harness) == ["s1", "s2"], "two ran, with a limit of 1 now: s3 waits")
        try process("s2", harness).exit(0)
        #expect(started(harness) == ["s1", "s2", "s3"])
    }

    @Test("pool.set refuses a bad name or limit with -32602, and pools past maxPools with -32004",
          arguments: [
              (["pool": "", "limit": 1], -32602),
              (["pool": "cc"], -32602),
              (["pool": "cc", "limit": -1], -32602),
              (["pool": "cc", "limit": 65_537], -32602),
              (["limit": 1], -32602),
              (["pool": "third", "limit": 1], -32004),
          ] as [(JSONValue, Int)])
    func poolSetRefuses(params: JSONValue, code: Int) {
        var limits = limits(pools: ["other": 1])
        limits.maxPools = 2
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        #expect(harness.errorCode("pool.set", params, from: peer) == code)
        #expect(harness.call("info", from: peer)["pools"]?.objectValue?.count == 2)
    }

    @Test("pool.acquire answers at once with a free slot, else in turn with queued steps, first come first served")
    func acquireQueuesWithSteps() throws {
        let harness = RPCHarness(limits: limits(pools: ["cc": 1]))
        let peer = harness.connect()
        let runner = harness.connect()
        #expect(harness.call("pool.acquire", ["pool": "cc", "id": "job"], from: runner) == ["pool": "cc", "held": 1])
        steps(["s1"], pool: "cc", harness: harness, peer: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        let second = harness.request("pool.acquire", ["pool": "cc"], from: runner)
        #expect(started(harness).isEmpty)
        #expect(pool("cc", harness, peer)["holders"] == [["connection": 2, "id": "job"]])
        #expect(pool("cc", harness, peer)["waiting"] == [["step": "s1"], ["connection": 2]])
        _ = runner.takeMessages()
        #expect(harness.call("pool.release", ["pool": "cc"], from: runner) == ["pool": "cc", "released": true, "held": 0])
        #expect(started(harness) == ["s1"])
        #expect(runner.takeMessages().allSatisfy { $0["id"] != .int(second) }, "the step came first")
        try process("s1", harness).exit(0)
        let answers = runner.takeMessages().filter { $0["id"] == .int(second) }
        #expect(answers.map { $0["result"] } == [["pool": "cc", "held": 1]])
        #expect(harness.call("pool.release", ["pool": "cc"], from: runner)["released"] == true)
        #expect(harness.call("pool.release", ["pool": "cc"], from: runner)["released"] == false)
    }

    @Test("a closed connection gives back the slots it held and leaves the queues it waited in")
    func disconnectReleases() throws {
        let harness = RPCHarness(limits: limits(pools: ["cc": 1]))
        let peer = harness.connect()
        let holder = harness.connect()
        let waiter = harness.connect()
        harness.call("pool.acquire", ["pool": "cc"], from: holder)
        harness.request("pool.acquire", ["pool": "cc"], from: waiter)
        steps(["s1"], pool: "cc", harness: harness, peer: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(pool("cc", harness, peer)["queued"] == 2)
        harness.close(waiter)
        #expect(pool("cc", harness, peer)["queued"] == 1)
        harness.close(holder)
        #expect(started(harness) == ["s1"])
        #expect(pool("cc", harness, peer)["holders"] == [["step": "s1"]])
    }

    @Test("pool.acquire of an unknown pool is -32602; as a notification it takes nothing")
    func acquireRefuses() {
        let harness = RPCHarness(limits: limits(pools: ["cc": 1]))
        let peer = harness.connect()
        #expect(harness.errorCode("pool.acquire", ["pool": "nope"], from: peer) == -32602)
        harness.notify("pool.acquire", ["pool": "cc"], from: peer)
        #expect(pool("cc", harness, peer)["running"] == 0)
        #expect(pool("cc", harness, peer)["queued"] == 0)
    }

    @Test("past maxQueued: then … exec and pool.acquire get -32004, and a step whose parent settles is rejected so")
    func queueBound() throws {
        let harness = RPCHarness(limits: limits(pools: ["cc": 1], maxQueued: 1))
        let peer = harness.connect()
        steps(["s1", "s2", "s3"], pool: "cc", harness: harness, peer: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(started(harness) == ["s1"])
        #expect(harness.record("s2", from: peer)["queued"] == true)
        let s3 = harness.record("s3", from: peer)
        #expect(s3["state"] == "rejected")
        #expect(s3["reason"]?["code"] == -32004)
        #expect(s3["reason"]?["data"] == ["limit": "maxQueued", "value": 1])
        let then = harness.answer("then", ["id": "a", "exec": ["true"], "pool": "cc"], from: peer)
        #expect(then["error"]?["code"] == -32004)
        #expect(then["error"]?["data"]?["limit"] == "maxQueued")
        let acquire = harness.answer("pool.acquire", ["pool": "cc"], from: peer)
        #expect(acquire["error"]?["data"]?["limit"] == "maxQueued")
    }

    @Test("a daemon stopping starts no queued step: it stays pending and queued")
    func stoppingKeepsQueue() throws {
        let harness = RPCHarness(limits: limits(pools: ["cc": 1]))
        let peer = harness.connect()
        steps(["s1", "s2"], pool: "cc", harness: harness, peer: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        harness.dispatcher.stop {}
        try process("s1", harness).exit(0)
        #expect(started(harness) == ["s1"])
        #expect(harness.record("s2", from: peer)["state"] == "pending")
        #expect(harness.record("s2", from: peer)["queued"] == true)
    }

    @Test("queued steps survive a restart in the order they queued, not the order they were made")
    func restartKeepsQueueOrder() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(limits: limits(pools: ["cc": 1]), store: store)
        let peer = first.connect()
        for id in ["p0", "pLate", "pEarly"] { first.call("create", ["id": .string(id)], from: peer) }
        for (parent, id) in [("p0", "x"), ("pLate", "late"), ("pEarly", "early")] {
            first.call("then", ["id": .string(parent), "childId": .string(id), "exec": ["run", .string(id)], "pool": "cc"],
                       from: peer)
        }
        first.call("resolve", ["id": "p0"], from: peer)
        first.call("resolve", ["id": "pEarly"], from: peer)
        first.call("resolve", ["id": "pLate"], from: peer)
        #expect(started(first) == ["x"])
        #expect(store["early"]?.queueTicket != nil)
        #expect(store["early"]?.pool == "cc")

        // x was running: it is not run again, and its slot is free for the first in the queue.
        let second = RPCHarness(limits: limits(pools: ["cc": 1]), store: store)
        second.registry.restore(try store.load())
        second.settleStore()
        let reader = second.connect()
        #expect(second.record("x", from: reader)["state"] == "rejected")
        #expect(started(second) == ["early"])
        #expect(second.record("late", from: reader)["queued"] == true)
        try process("early", second).exit(0)
        second.settleStore()
        #expect(started(second) == ["early", "late"])
        #expect(store["late"]?.queueTicket == nil)
        #expect(store["late"]?.execStarted == true)
    }

    @Test("a step restored in a pool a store written before pool limits were kept lacks gets that pool again, with the default pool's limit")
    func restartRemakesRuntimePool() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        first.call("pool.set", ["pool": "adhoc", "limit": 0], from: peer)
        steps(["s1"], pool: "adhoc", harness: first, peer: peer)
        first.call("resolve", ["id": "a"], from: peer)
        #expect(started(first).isEmpty)

        var contents = try store.load()
        #expect(contents.poolLimits == [StoredPoolLimit(pool: "adhoc", limit: 0, startLimit: nil)])
        contents.poolLimits = []
        let second = RPCHarness(limits: limits(default: 3), store: MemoryPromiseStore(contents.promises))
        second.registry.restore(contents)
        second.settleStore()
        #expect(started(second) == ["s1"])
        #expect(pool("adhoc", second, second.connect())["limit"] == 3)
    }

    @Test("limits set with pool.set survive a restart: of a started pool, of one made at run time, of default")
    func poolSetSurvivesRestart() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(limits: limits(pools: ["cc": 4]), store: store)
        let peer = first.connect()
        first.call("pool.set", ["pool": "cc", "limit": 1], from: peer)
        first.call("pool.set", ["pool": "adhoc", "limit": 2], from: peer)
        first.call("pool.set", ["pool": "default", "limit": 5], from: peer)
        first.call("pool.set", ["pool": "cc", "limit": 1], from: peer)
        first.settleStore()
        #expect(try store.load().poolLimits == [
            StoredPoolLimit(pool: "adhoc", limit: 2, startLimit: nil),
            StoredPoolLimit(pool: "cc", limit: 1, startLimit: 4),
            StoredPoolLimit(pool: "default", limit: 5, startLimit: 256),
        ])

        let second = RPCHarness(limits: limits(pools: ["cc": 4]), store: store)
        second.registry.restore(try store.load())
        second.settleStore()
        let reader = second.connect()
        #expect(pool("cc", second, reader)["limit"] == 1)
        #expect(pool("adhoc", second, reader)["limit"] == 2)
        #expect(pool("default", second, reader)["limit"] == 5)
        steps(["s1", "s2"], pool: "cc", harness: second, peer: reader)
        second.call("resolve", ["id": "a"], from: reader)
        #expect(started(second) == ["s1"])
        #expect(second.record("s2", from: reader)["queued"] == true)
    }

    @Test("a daemon started with another limit for a pool than pool.set was stored under keeps the new start limit, and so do later restarts")
    func newStartLimitBeatsStoredPoolSet() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(limits: limits(pools: ["cc": 4]), store: store)
        first.call("pool.set", ["pool": "cc", "limit": 1], from: first.connect())
        first.settleStore()

        let second = RPCHarness(limits: limits(pools: ["cc": 8]), store: store)
        second.registry.restore(try store.load())
        second.settleStore()
        #expect(pool("cc", second, second.connect())["limit"] == 8)
        #expect(try store.load().poolLimits == [StoredPoolLimit(pool: "cc", limit: 8, startLimit: 8)])

        // Back to the first options: the run-time 1 is not brought back, it was overruled.
        let third = RPCHarness(limits: limits(pools: ["cc": 4]), store: store)
        third.registry.restore(try store.load())
        third.settleStore()
        #expect(pool("cc", third, third.connect())["limit"] == 4)
    }

    @Test("stored pool limits that are not valid are skipped: the pool keeps its start limit")
    func invalidStoredPoolLimitsAreSkipped() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(limits: limits(pools: ["cc": 4]), store: store)
        harness.registry.restore(StoreContents(poolLimits: [
            StoredPoolLimit(pool: "cc", limit: -1, startLimit: 4),
            StoredPoolLimit(pool: "bad name", limit: 1, startLimit: nil),
            StoredPoolLimit(pool: "big", limit: 70_000, startLimit: nil),
        ]))
        harness.settleStore()
        let reader = harness.connect()
        #expect(pool("cc", harness, reader)["limit"] == 4)
        #expect(harness.call("info", from: reader)["pools"]?.objectValue?.keys.sorted() == ["cc", "default"])
    }

    @Test("pool.set is refused while the store cannot write, and changes no limit")
    func poolSetRefusedWhileStoreFails() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(limits: limits(pools: ["cc": 4]), store: store)
        let peer = harness.connect()
        store.failCommits = PromiseStoreError("disk full")
        #expect(harness.errorCode("create", ["id": "x"], from: peer) == -32603)
        #expect(harness.errorCode("pool.set", ["pool": "cc", "limit": 1], from: peer) == -32603)
        store.failCommits = nil
        #expect(pool("cc", harness, peer)["limit"] == 4)
    }

    @Test("a stored promise without pool or queueTicket (written before pools) loads into the default pool")
    func oldRowsLoad() throws {
        let old: JSONValue = [
            "id": "s", "sequence": 1, "kind": "then", "parent": "a", "on": "fulfilled", "exec": ["true"],
            "created": 5, "state": "pending",
        ]
        let stored = try StoredPromise(json: old)
        #expect(stored.pool == nil)
        #expect(stored.queueTicket == nil)
        #expect(stored.json == old)
    }
}

extension JSONValue {
    /// This object with `other`'s members added (`other` wins).
    fileprivate func merging(_ other: JSONValue) -> JSONValue {
        .object((objectValue ?? [:]).merging(other.objectValue ?? [:]) { _, new in new })
    }
}
