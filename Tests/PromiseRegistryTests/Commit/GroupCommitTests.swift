import Foundation
import Logging
@testable import PromiseModel
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// The group commit on its own: the test plays the loop thread (draining
/// `loop`) and the writer (draining `writer`), so it decides what happens
/// while a commit is in flight.
@Suite("GroupCommit")
struct GroupCommitTests {
    /// A ``MemoryPromiseStore`` that runs `duringCommit` inside each commit,
    /// before applying it: what the loop does while the disk is busy.
    final class HookedStore: PromiseStore, @unchecked Sendable {  // Used from the test's thread only.
        let memory = MemoryPromiseStore()
        var duringCommit: [() -> Void] = []
        var location: String { "hooked" }
        func load() throws -> StoreContents { try memory.load() }
        func commit(_ batch: StoreBatch) throws -> [UnstorableChange] {
            if !duringCommit.isEmpty { duringCommit.removeFirst()() }
            return try memory.commit(batch)
        }
    }

    /// A journal over `store` whose snapshots are `states`, as the test sets them.
    final class Fixture {
        let store = HookedStore()
        let loop = RPCManualExecutor()
        let writer = RPCManualExecutor()
        let services = RPCFakeLoop()
        var states: [String: StoredPromise] = [:]
        let journal: GroupCommit
        /// What `deliver` ran, in order, with the failure it was given.
        var delivered: [(String, PromiseStoreError?)] = []

        init() {
            journal = GroupCommit(store: store, loop: loop, writer: writer, services: services,
                                  logger: Logger(label: "test.journal") { _ in SwiftLogNoOpLogHandler() })
            journal.snapshots = { [unowned self] ids in ids.compactMap { states[$0] } }
        }

        /// Changes promise `id` to `state` in memory.
        func change(_ id: String, sequence: Int = 1, state: StoredPromise.State = .pending) {
            states[id] = StoredPromise(id: id, sequence: sequence, kind: .created, created: 0, state: state)
            journal.touch(id)
        }

        /// Drops promise `id` from memory.
        func drop(_ id: String, sequence: Int = 1) {
            states[id] = nil
            journal.remove(StoreDeletion(id: id, sequence: sequence))
        }

        func send(_ message: String) {
            journal.deliver { [unowned self] failure in delivered.append((message, failure)) }
        }

        var deliveredMessages: [String] { delivered.map(\.0) }
    }

    @Test("what is cut during a commit is committed right after it by the writer, before the loop hears of the first")
    func writerTakesTheNextBatchWithoutTheLoop() {
        let fixture = Fixture()
        fixture.change("a")
        fixture.send("answer a")
        fixture.loop.drain()  // cut 1: starts the writer
        fixture.store.duringCommit = [{
            fixture.change("b")
            fixture.send("answer b")
            fixture.loop.drain()  // cut 2, while cut 1 is being committed
        }]
        fixture.writer.drain()
        #expect(fixture.store.memory.commitCount == 2)
        #expect(fixture.store.memory["b"]?.state == .pending)
        #expect(fixture.deliveredMessages.isEmpty)
        fixture.loop.drain()
        #expect(fixture.deliveredMessages == ["answer a", "answer b"])
        #expect(fixture.journal.commitCount == 2)
    }

    @Test("a message waits only for the cuts before it: released when they are committed, in the order given")
    func messagesWaitForTheirOwnCut() {
        let fixture = Fixture()
        fixture.change("a")
        fixture.send("answer a")
        fixture.loop.drain()
        fixture.send("read after a")
        var deliveredDuringSecondCommit: [String] = []
        fixture.store.duringCommit = [
            {
                fixture.change("b")
                fixture.send("answer b")
                fixture.loop.drain()
            },
            {
                fixture.loop.drain()  // the loop hears of the first commit while the second runs
                deliveredDuringSecondCommit = fixture.deliveredMessages
            },
        ]
        fixture.writer.drain()
        #expect(deliveredDuringSecondCommit == ["answer a", "read after a"])
        fixture.loop.drain()
        #expect(fixture.deliveredMessages == ["answer a", "read after a", "answer b"])
        #expect(fixture.delivered.allSatisfy { $0.1 == nil })
    }

    @Test("a promise written by one cut and deleted by a later one, committed together, is not stored")
    func deletionInALaterCutDropsTheEarlierWrite() {
        let fixture = Fixture()
        fixture.change("a")
        fixture.change("kept")
        fixture.loop.drain()  // cut 1 waits for the writer
        fixture.drop("a")
        fixture.loop.drain()  // cut 2 joins it
        fixture.writer.drain()
        #expect(fixture.store.memory.commitCount == 1)
        #expect(fixture.store.memory["a"] == nil)
        #expect(fixture.store.memory["kept"] != nil)
    }

    @Test("a promise deleted and made again with a new sequence in later cuts is stored once, as the new one")
    func remadeIDIsStoredUnderItsNewSequence() throws {
        let fixture = Fixture()
        fixture.change("a", sequence: 1)
        fixture.loop.drain()
        fixture.writer.drain()
        fixture.loop.drain()
        fixture.change("x")
        fixture.loop.drain()  // the writer is idle until drained: the next cuts join this one
        fixture.drop("a", sequence: 1)
        fixture.loop.drain()
        fixture.change("a", sequence: 2, state: .fulfilled)
        fixture.loop.drain()
        fixture.writer.drain()
        let stored = try #require(fixture.store.memory["a"])
        #expect(stored.sequence == 2)
        #expect(stored.state == .fulfilled)
        #expect(Set(try fixture.store.memory.load().promises.map(\.id)) == ["a", "x"])
    }

    @Test("a batch that fails is retried ahead of what was cut after it, so the newer state is what is stored")
    func failedBatchIsRetriedBeforeLaterCuts() {
        let fixture = Fixture()
        fixture.store.memory.failCommits = PromiseStoreError("disk full")
        fixture.change("a", state: .pending)
        fixture.send("answer a")
        fixture.loop.drain()
        fixture.store.duringCommit = [{
            fixture.change("a", state: .fulfilled)  // cut while the failing commit runs
            fixture.loop.drain()
        }]
        fixture.writer.drain()
        fixture.loop.drain()
        #expect(fixture.journal.failure == PromiseStoreError("disk full"))
        #expect(fixture.delivered.map(\.1) == [PromiseStoreError("disk full")])

        fixture.change("b")  // cut while failing: queued behind both
        fixture.loop.drain()
        #expect(fixture.writer.isEmpty)
        fixture.store.memory.failCommits = nil
        fixture.services.advance(by: GroupCommit.retryMilliseconds)
        fixture.writer.drain()
        fixture.loop.drain()
        #expect(fixture.store.memory["a"]?.state == .fulfilled)
        #expect(fixture.store.memory["b"] != nil)
        #expect(fixture.store.memory.commitCount == 1)
        #expect(fixture.journal.failure == nil)
    }

    @Test("while the store fails, cuts do not start the writer; the retry does, once a second")
    func failingStoreWaitsForTheRetry() {
        let fixture = Fixture()
        fixture.store.memory.failCommits = PromiseStoreError("read-only")
        fixture.change("a")
        fixture.loop.drain()
        fixture.writer.drain()
        fixture.loop.drain()
        fixture.change("b")
        fixture.loop.drain()
        #expect(fixture.writer.isEmpty)
        fixture.services.advance(by: GroupCommit.retryMilliseconds - 1)
        #expect(fixture.writer.isEmpty)
        fixture.services.advance(by: 1)
        fixture.writer.drain()  // fails again
        fixture.loop.drain()
        #expect(fixture.journal.failure == PromiseStoreError("read-only"))
        fixture.store.memory.failCommits = nil
        fixture.services.advance(by: GroupCommit.retryMilliseconds)
        fixture.writer.drain()
        fixture.loop.drain()
        #expect(fixture.store.memory["a"] != nil)
        #expect(fixture.store.memory["b"] != nil)
        #expect(fixture.journal.failure == nil)
    }
}
