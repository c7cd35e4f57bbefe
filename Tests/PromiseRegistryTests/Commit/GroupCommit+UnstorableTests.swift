import Foundation
import Logging
@testable import PromiseModel
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// Changes the store refuses for good: only the messages that depend on
/// them get an error; the store is not failing and nothing is retried.
@Suite("GroupCommit unstorable changes")
struct GroupCommitUnstorableTests {
    typealias Fixture = GroupCommitTests.Fixture
    private static let tooBig = PromiseStoreError(#"promise "big" cannot be stored: string or blob too big"#)

    /// Cuts, commits and reports back everything outstanding.
    private func settle(_ fixture: Fixture) {
        fixture.loop.drain()
        fixture.writer.drain()
        fixture.loop.drain()
    }

    @Test("a change refused for good fails only the message that made it; the rest is stored and delivered, and the store is not failing")
    func refusedChangeFailsItsMessageOnly() {
        let fixture = Fixture()
        fixture.store.memory.refusedIDs = ["big": "string or blob too big"]
        fixture.change("a")
        fixture.send("answer a")
        fixture.change("big")
        fixture.send("answer big")
        fixture.change("b")
        fixture.send("answer b")
        fixture.send("read")
        settle(fixture)

        #expect(fixture.deliveredMessages == ["answer a", "answer big", "answer b", "read"])
        #expect(fixture.delivered.map(\.1) == [nil, Self.tooBig, nil, nil])
        #expect(fixture.store.memory["a"] != nil && fixture.store.memory["b"] != nil)
        #expect(fixture.store.memory["big"] == nil)
        #expect(fixture.journal.failure == nil)
        #expect(fixture.journal.unstorableCount == 1)
        #expect(fixture.journal.changeCount == 2)
        #expect(fixture.journal.commitCount == 1)

        // Nothing is retried, and the next change is held and stored as usual.
        fixture.services.advance(by: GroupCommit.retryMilliseconds)
        #expect(fixture.writer.isEmpty)
        fixture.change("c")
        fixture.send("answer c")
        #expect(fixture.deliveredMessages.count == 4)
        settle(fixture)
        #expect(fixture.delivered.last?.0 == "answer c" && fixture.delivered.last?.1 == nil)
        #expect(fixture.store.memory["c"] != nil)
        #expect(fixture.store.memory.commitCount == 2)
    }

    @Test("a promise changed for two messages in one turn fails both; a message between them that changed another is delivered")
    func everyMessageThatChangedItFails() {
        let fixture = Fixture()
        fixture.store.memory.refusedIDs = ["big": "string or blob too big"]
        fixture.change("big")
        fixture.send("first")
        fixture.change("x")
        fixture.send("between")
        fixture.change("big", state: .fulfilled)
        fixture.change("y")
        fixture.send("second")
        settle(fixture)
        #expect(fixture.deliveredMessages == ["first", "between", "second"])
        #expect(fixture.delivered.map(\.1) == [Self.tooBig, nil, Self.tooBig])
        #expect(fixture.store.memory["x"] != nil && fixture.store.memory["y"] != nil)
    }

    @Test("a refused deletion fails the message that made it, and the promise stays stored")
    func refusedDeletionFailsItsMessage() {
        let fixture = Fixture()
        fixture.change("big")
        settle(fixture)
        fixture.store.memory.refusedIDs = ["big": "string or blob too big"]
        fixture.drop("big")
        fixture.send("forget big")
        settle(fixture)
        #expect(fixture.delivered.last?.0 == "forget big" && fixture.delivered.last?.1 == Self.tooBig)
        #expect(fixture.store.memory["big"] != nil)
        #expect(fixture.journal.failure == nil)
    }

    @Test("a refused change no message claimed before its batch was committed (a timeout's) fails no later message")
    func unclaimedRefusalFailsNoLaterMessage() {
        let fixture = Fixture()
        fixture.store.memory.refusedIDs = ["big": "string or blob too big"]
        fixture.change("big")
        settle(fixture)
        #expect(fixture.journal.unstorableCount == 1)
        fixture.change("c")
        fixture.send("answer c")
        fixture.send("read")
        settle(fixture)
        #expect(fixture.deliveredMessages == ["answer c", "read"])
        #expect(fixture.delivered.allSatisfy { $0.1 == nil })
    }

    @Test("a refused change is logged at error level with the promise's id and the store's reason")
    func refusalIsLogged() {
        let records = RecordingLogHandler.Records()
        let loop = RPCManualExecutor()
        let writer = RPCManualExecutor()
        let store = MemoryPromiseStore()
        store.refusedIDs = ["big": "string or blob too big"]
        let journal = GroupCommit(store: store, loop: loop, writer: writer, services: RPCFakeLoop(),
                                  logger: Logger(label: "test") { _ in RecordingLogHandler(records: records) })
        journal.snapshots = { ids in ids.map { StoredPromise(id: $0, sequence: 3, kind: .created, created: 0) } }
        journal.touch("big")
        loop.drain()
        writer.drain()
        loop.drain()
        let errors = records.entries.filter { $0.level == .error }
        #expect(errors.count == 1)
        #expect(errors.first?.metadata["promise.id"] == "big")
        #expect(errors.first?.metadata["reason"] == "string or blob too big")
        #expect(errors.first?.metadata["store"] == "memory")
    }
}
