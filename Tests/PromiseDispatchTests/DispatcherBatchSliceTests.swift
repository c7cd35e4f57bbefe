import Foundation
import Promise
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// A batch runs in slices of a turn's budget each, the rest in later turns
/// of the loop's executor, while its connection handles no other line: the
/// clock these tests give the dispatcher moves one tick per reading, so a
/// budget of 3 ticks lets a slice run 3 members.
@Suite("batches run in slices of a loop turn")
struct DispatcherBatchSliceTests {
    private static func creates(_ count: Int) -> [(method: String, params: JSONValue)] {
        (0..<count).map { ("create", ["id": .string("p\($0)")]) }
    }

    private static func slicedHarness(store: MemoryPromiseStore? = nil) -> (RPCHarness, RPCManualExecutor) {
        let loop = RPCManualExecutor()
        let harness = RPCHarness(store: store, executor: loop)
        harness.dispatcher.turnBudget = TurnBudget(nanoseconds: 3, clock: RPCTickClock().read)
        return (harness, loop)
    }

    @Test("a batch past its budget runs 3 members a turn and is answered once, in member order")
    func batchRunsInSlices() throws {
        let (harness, loop) = Self.slicedHarness()
        let peer = harness.connect()
        harness.sendBatch(Self.creates(7), from: peer)
        #expect(harness.registry.count == 3)
        #expect(peer.sent.isEmpty)
        #expect(peer.lineEvents == ["continues"])

        loop.runTurn()
        #expect(harness.registry.count == 6)
        #expect(peer.sent.isEmpty)

        loop.runTurn()
        #expect(harness.registry.count == 7)
        #expect(peer.lineEvents == ["continues", "finished"])
        #expect(loop.isEmpty)
        let lines = peer.takeMessages()
        #expect(lines.count == 1)
        let answers = try #require(lines.first?.arrayValue)
        #expect(answers.map { $0["id"] } == (1...7).map { .int($0) })
        #expect(answers.map { $0["result"]?["id"] } == (0..<7).map { .string("p\($0)") })
    }

    @Test("a batch within its budget is answered before the line returns, its connection never held")
    func shortBatchIsNotHeld() throws {
        let (harness, loop) = Self.slicedHarness()
        let peer = harness.connect()
        let answers = try harness.batchAnswers(Self.creates(3), from: peer)
        #expect(answers.map { $0["result"]?["state"] } == Array(repeating: "pending", count: 3))
        #expect(peer.lineEvents.isEmpty)
        #expect(loop.isEmpty)
    }

    @Test("ids read in place from the line are kept by the members run in later turns")
    func lentIDsOutliveTheLine() throws {
        let (harness, loop) = Self.slicedHarness()
        let peer = harness.connect()
        let ids = (0..<7).map { "a-promise-id-long-enough-to-lend-\($0)" }
        harness.sendBatch(ids.map { ("create", ["id": .string($0)]) }, from: peer)
        loop.drain()
        peer.takeMessages()
        let batch = JSONValue.array(ids.enumerated().map { index, id in
            ["jsonrpc": "2.0", "id": .int(index + 1), "method": "resolve", "params": ["id": .string(id), "value": 1]]
        })
        // The line is overwritten once handed over, as the server's read buffer is by its next read.
        let line = UnsafeMutableRawBufferPointer.allocate(byteCount: batch.serialized().count, alignment: 1)
        defer { line.deallocate() }
        line.copyBytes(from: batch.serialized())
        harness.dispatcher.handle(line: UnsafeRawBufferPointer(line), from: peer)
        line.initializeMemory(as: UInt8.self, repeating: UInt8(ascii: "x"))
        loop.drain()
        let answers = try #require(peer.takeMessages().first?.arrayValue)
        #expect(answers.map { $0["result"]?["id"] } == ids.map { .string($0) })
        #expect(answers.map { $0["result"]?["state"] } == Array(repeating: "fulfilled", count: 7))
    }

    @Test("with an executor that runs work at once, every slice runs before the line returns")
    func inlineExecutorRunsEverySlice() throws {
        let harness = RPCHarness()
        harness.dispatcher.turnBudget = TurnBudget(nanoseconds: 3, clock: RPCTickClock().read)
        let peer = harness.connect()
        let answers = try harness.batchAnswers(Self.creates(1_000), from: peer)
        #expect(answers.count == 1_000)
        #expect(answers.last?["result"]?["id"] == "p999")
        #expect(peer.lineEvents == ["continues", "finished"])
    }

    @Test("a durable batch is answered once every slice's changes are stored, not before")
    func durableBatchWaitsForItsCommit() throws {
        let store = MemoryPromiseStore()
        let (harness, loop) = Self.slicedHarness(store: store)
        let peer = harness.connect()
        harness.sendBatch(Self.creates(5), from: peer)
        loop.runTurn()
        #expect(peer.lineEvents == ["continues", "finished"])
        #expect(peer.sent.isEmpty)
        harness.settleStore()
        let answers = try #require(peer.takeMessages().first?.arrayValue)
        #expect(answers.count == 5)
        #expect(try store.load().promises.count == 5)
    }

    @Test("a batch whose connection closes runs no further member")
    func closedConnectionStopsTheBatch() throws {
        let (harness, loop) = Self.slicedHarness()
        let peer = harness.connect()
        harness.sendBatch(Self.creates(7), from: peer)
        harness.close(peer)
        loop.drain()
        #expect(harness.registry.count == 3)
        #expect(peer.sent.isEmpty)
        #expect(peer.lineEvents == ["continues", "finished"])
    }

    @Test("a batch the daemon's stop overtakes runs no further member")
    func stopStopsTheBatch() throws {
        let (harness, loop) = Self.slicedHarness()
        let peer = harness.connect()
        harness.sendBatch(Self.creates(7), from: peer)
        var stopped = false
        harness.dispatcher.stop { stopped = true }
        loop.drain()
        #expect(stopped)
        #expect(harness.registry.count == 3)
        #expect(peer.lineEvents == ["continues", "finished"])
    }
}
