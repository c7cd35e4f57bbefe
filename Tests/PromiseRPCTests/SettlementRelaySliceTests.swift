import Foundation
import Promise
@testable import PromiseRPC
import Synchronization
import Testing

/// The news of a settlement that reaches many promises is passed on a turn's
/// budget at a time, the rest in later turns of the executor, in the order
/// it was heard: the clock given to the relay moves one tick per reading, so
/// a budget of 3 ticks passes on 3 pieces of news a turn.
@Suite("settlement news passed on in slices of a loop turn")
struct SettlementRelaySliceTests {
    final class TickClock: Sendable {
        private let ticks = Atomic<UInt64>(0)
        func read() -> UInt64 { ticks.add(1, ordering: .relaxed).newValue }
    }

    /// A parent with `count` `then` children, each waited on by `waiter`.
    private static func parentWithWaitedChildren(
        _ count: Int, _ harness: RPCHarness, settler: RPCFakePeer, waiter: RPCFakePeer
    ) -> [Int] {
        harness.call("create", ["id": "parent"], from: settler)
        let waits = (0..<count).map { index in
            harness.call("then", ["id": "parent", "childId": .string("kid\(index)")], from: settler)
            return harness.request("wait", ["id": .string("kid\(index)")], from: waiter)
        }
        waiter.takeMessages()
        harness.registry.settlementRelay.turnBudget = TurnBudget(nanoseconds: 3, clock: TickClock().read)
        return waits
    }

    @Test("resolving a parent of 10 waited children answers 3 of its news a turn, the waiters in child order")
    func newsPassedOnInSlices() {
        let loop = RPCManualExecutor()
        let harness = RPCHarness(executor: loop)
        let settler = harness.connect()
        let waiter = harness.connect()
        let waits = Self.parentWithWaitedChildren(10, harness, settler: settler, waiter: waiter)
        harness.call("resolve", ["id": "parent", "value": 1], from: settler)
        // Every child settled at once; their news told 3 a turn (the parent's first).
        #expect(harness.state("kid9", from: settler) == "fulfilled")
        var answered = waiter.takeMessages().map { $0["id"] }
        #expect(answered == waits.prefix(2).map { .int($0) })
        loop.runTurn()
        answered += waiter.takeMessages().map { $0["id"] }
        #expect(answered == waits.prefix(5).map { .int($0) })
        loop.drain()
        answered += waiter.takeMessages().map { $0["id"] }
        #expect(answered == waits.map { .int($0) })
    }

    @Test("news heard while earlier news waits for a later turn is passed on after it")
    func laterNewsWaitsBehind() {
        let loop = RPCManualExecutor()
        let harness = RPCHarness(executor: loop)
        let settler = harness.connect()
        let waiter = harness.connect()
        harness.call("create", ["id": "other"], from: settler)
        let waits = Self.parentWithWaitedChildren(10, harness, settler: settler, waiter: waiter)
        let otherWait = harness.request("wait", ["id": "other"], from: waiter)
        harness.call("resolve", ["id": "parent", "value": 1], from: settler)
        harness.call("resolve", ["id": "other", "value": 2], from: settler)
        loop.drain()
        let answered = waiter.takeMessages().map { $0["id"] }
        #expect(answered == (waits + [otherWait]).map { .int($0) })
    }

    @Test("with an executor that runs work at once, all news is passed on before the answer returns")
    func inlineExecutorPassesAllOn() {
        let harness = RPCHarness()
        let settler = harness.connect()
        let waiter = harness.connect()
        let waits = Self.parentWithWaitedChildren(2_000, harness, settler: settler, waiter: waiter)
        harness.call("resolve", ["id": "parent", "value": 1], from: settler)
        #expect(waiter.takeMessages().map { $0["id"] } == waits.map { .int($0) })
    }
}
