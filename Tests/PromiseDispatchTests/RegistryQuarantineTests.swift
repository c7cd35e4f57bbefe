import Foundation
import Logging
import Promise
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// Restoring a store that set some promises aside: what depends on them is
/// rejected, naming them, and everything else is served.
@Suite("Registry quarantine")
struct RegistryQuarantineTests {
    private static let reason = "not valid JSON: nesting deeper than 512 levels at byte 594"
    private static let deep = QuarantinedPromise(id: "x128", sequence: 1, reason: reason, time: 1_700_000_000_000)

    private func restart(from store: MemoryPromiseStore) throws -> RPCHarness {
        let harness = RPCHarness(store: store)
        harness.registry.restore(try store.load())
        harness.settleStore()
        return harness
    }

    @Test("a then child and a combinator over a quarantined promise are rejected at restore, naming it and why; info counts it")
    func dependentsAreRejected() throws {
        let store = MemoryPromiseStore([
            StoredPromise(id: "kept", sequence: 0, kind: .created, created: 1),
            StoredPromise(id: "child", sequence: 2, kind: .then, parentID: "x128", on: .fulfilled, created: 1),
            StoredPromise(id: "both", sequence: 3, kind: .combinator(.all), inputIDs: ["kept", "x128"], policy: .failFast, created: 1),
            StoredPromise(id: "done", sequence: 4, kind: .then, parentID: "x128", on: .fulfilled, created: 1,
                          settled: 2, state: .fulfilled, value: 7),
        ], quarantined: [Self.deep])
        let harness = try restart(from: store)
        let peer = harness.connect()

        let child = harness.record("child", from: peer)
        #expect(child["state"] == "rejected")
        #expect(child["reason"]?["message"] == .string(#"cannot be restored: its parent "x128" was quarantined: "# + Self.reason))
        #expect(child["reason"]?["data"] == ["quarantined": "x128", "reason": .string(Self.reason)])
        let both = harness.record("both", from: peer)
        #expect(both["state"] == "rejected")
        #expect(both["reason"]?["message"] == .string(#"cannot be restored: its input "x128" was quarantined: "# + Self.reason))
        #expect(harness.record("done", from: peer)["value"] == 7)
        #expect(harness.state("kept", from: peer) == "pending")
        #expect(harness.errorCode("get", ["id": "x128"], from: peer) == -32001)
        #expect(store["child"]?.state == .rejected)
        #expect(store["both"]?.state == .rejected)
        #expect(harness.call("info", from: peer)["store"]?["quarantined"] == 1)
    }

    @Test("restore logs each quarantined promise at error level with its id and reason, and reports the count")
    func quarantineIsLogged() throws {
        let records = RecordingLogHandler.Records()
        let logger = Logger(label: "test") { _ in RecordingLogHandler(records: records) }
        let store = MemoryPromiseStore(quarantined: [Self.deep])
        let journal = GroupCommit(store: store, loop: RPCManualExecutor(), writer: .inline, services: RPCFakeLoop(),
                                  logger: logger)
        let registry = Registry(limits: DaemonLimits(), services: RPCFakeLoop(), executor: .inline, journal: journal,
                                logger: logger)
        let summary = registry.restore(try store.load())
        #expect(summary.quarantined == 1)
        let errors = records.entries.filter { $0.level == .error }
        #expect(errors.count == 1)
        #expect(errors.first?.metadata["promise.id"] == "x128")
        #expect(errors.first?.metadata["reason"] == .some(Self.reason))
    }

    @Test("the id and sequence of a quarantined promise are not given to a new one")
    func quarantinedIDsAreNotReused() throws {
        let store = MemoryPromiseStore(quarantined: [QuarantinedPromise(id: "p7", sequence: 10, reason: "{", time: 0)])
        let harness = try restart(from: store)
        let peer = harness.connect()
        let created = harness.call("create", from: peer)
        #expect(created["id"] == "p8")
        #expect(store["p8"]?.sequence == 11)
    }
}
