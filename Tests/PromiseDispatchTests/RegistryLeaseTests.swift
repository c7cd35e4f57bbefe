import Foundation
import Promise
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// The `lease` method, and leases that outlive a restart for a grace period.
@Suite("Registry leases across restarts")
struct RegistryLeaseTests {
    /// A registry restarted from `store`, with `grace` milliseconds for leases to be taken back.
    private func restart(from store: MemoryPromiseStore, grace: UInt64) throws -> RPCHarness {
        let harness = RPCHarness(store: store)
        harness.registry.leaseGraceMilliseconds = grace
        harness.registry.restore(try store.load())
        harness.settleStore()
        return harness
    }

    @Test("lease on a pending promise that nobody holds makes the caller its holder: closing rejects it")
    func leaseTakesAnExistingPromise() {
        let harness = RPCHarness()
        let creator = harness.connect()
        let runner = harness.connect()
        harness.call("create", ["id": "job"], from: creator)
        let record = harness.call("lease", ["id": "job"], from: runner)
        #expect(record["state"] == "pending")
        #expect(record["lease"] == true)
        harness.close(creator)
        #expect(harness.state("job", from: runner) == "pending")
        let watcher = harness.connect()
        harness.close(runner)
        let closed = harness.record("job", from: watcher)
        #expect(closed["state"] == "rejected")
        #expect(closed["reason"]?["message"] == "lease expired: the connection that created it closed")
    }

    @Test("lease: the holder again is a no-op; another open holder is -32003; settled -32002; unknown -32001; no id -32602")
    func leaseRefusals() {
        let harness = RPCHarness()
        let holder = harness.connect()
        let other = harness.connect()
        harness.call("create", ["id": "held", "lease": true], from: holder)
        #expect(harness.call("lease", ["id": "held"], from: holder)["state"] == "pending")
        #expect(harness.errorCode("lease", ["id": "held"], from: other) == -32003)
        harness.call("create", ["id": "done"], from: holder)
        harness.call("resolve", ["id": "done", "value": 1], from: holder)
        #expect(harness.errorCode("lease", ["id": "done"], from: other) == -32002)
        #expect(harness.errorCode("lease", ["id": "nobody"], from: other) == -32001)
        #expect(harness.errorCode("lease", [:], from: other) == -32602)
        // The refused caller took nothing: closing it leaves the promise pending.
        harness.close(other)
        #expect(harness.state("held", from: holder) == "pending")
    }

    @Test("a lease taken with the lease method is stored, so that a restart knows the promise is leased")
    func leaseIsStored() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        let peer = harness.connect()
        harness.call("create", ["id": "job"], from: peer)
        #expect(store["job"]?.lease == false)
        harness.call("lease", ["id": "job"], from: peer)
        #expect(store["job"]?.lease == true)
    }

    @Test("after a restart, a lease taken back within the grace is kept; one not taken back is rejected when it ends")
    func graceKeepsReclaimedLeases() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let old = first.connect()
        first.call("create", ["id": "kept", "lease": true], from: old)
        first.call("create", ["id": "dropped", "lease": true], from: old)

        let second = try restart(from: store, grace: 10_000)
        let client = second.connect()
        #expect(second.state("kept", from: client) == "pending")
        #expect(second.state("dropped", from: client) == "pending")
        second.call("lease", ["id": "kept"], from: client)
        second.loop.advance(by: 9_999)
        second.settleStore()
        #expect(second.state("dropped", from: client) == "pending")
        second.loop.advance(by: 1)
        second.settleStore()
        let dropped = second.record("dropped", from: client)
        #expect(dropped["state"] == "rejected")
        #expect(dropped["reason"]?["message"] == "lease expired: the daemon restarted")
        #expect(dropped["reason"]?["data"]?["leaseGraceMs"] == 10_000)
        #expect(store["dropped"]?.state == .rejected)
        #expect(second.state("kept", from: client) == "pending")
        // Taken back, it is this connection's lease now.
        let watcher = second.connect()
        second.close(client)
        #expect(second.record("kept", from: watcher)["reason"]?["message"]
            == "lease expired: the connection that created it closed")
    }

    @Test("after a restart, the lease of the old daemon's connection can be taken by any client, once")
    func restoredLeaseHasNoHolder() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        first.call("create", ["id": "job", "lease": true], from: first.connect())
        let second = try restart(from: store, grace: 5_000)
        let a = second.connect()
        let b = second.connect()
        second.call("lease", ["id": "job"], from: a)
        #expect(second.errorCode("lease", ["id": "job"], from: b) == -32003)
    }

    @Test("without a grace, a restored lease is rejected at start-up, as before")
    func noGraceRejectsAtOnce() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        first.call("create", ["id": "held", "lease": true], from: first.connect())
        let second = try restart(from: store, grace: 0)
        let record = second.record("held", from: second.connect())
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["message"] == "lease expired: the daemon restarted")
        #expect(record["reason"]?["data"] == nil)
    }

    @Test("a then child and a combinator taken with the lease method end at a restart as a created promise does",
          arguments: [UInt64(0), 3_000])
    func leasedChildrenEndAtRestart(grace: UInt64) throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        first.call("create", ["id": "parent"], from: peer)
        first.call("then", ["id": "parent", "childId": "child"], from: peer)
        first.call("all", ["id": "both", "ids": ["parent", "child"]], from: peer)
        first.call("lease", ["id": "child"], from: peer)
        first.call("lease", ["id": "both"], from: peer)
        let second = try restart(from: store, grace: grace)
        let client = second.connect()
        if grace > 0 {
            #expect(second.state("child", from: client) == "pending")
            second.loop.advance(by: grace)
            second.settleStore()
        }
        for id in ["child", "both"] {
            let record = second.record(id, from: client)
            #expect(record["state"] == "rejected")
            #expect(record["reason"]?["message"] == "lease expired: the daemon restarted")
        }
        #expect(second.state("parent", from: client) == "pending")
    }
}
