import Foundation
import Promise
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
import PromiseTestSupport
import Testing

/// The news of a settlement that reaches many promises is passed on a turn's
/// budget at a time, the rest in later turns of the executor, in the order
/// it was heard: the clock given to the relay moves one tick per reading, so
/// a budget of 3 ticks passes on 3 pieces of news a turn.
@Suite("settlement news passed on in slices of a loop turn")
struct SettlementRelaySliceTests {
    /// A registry holding "other" and "parent" with `children` `then`
    /// children, each waited on by `waiter`, the waits' request ids in `waits`.
    struct Setup {
        let harness: RPCHarness
        let settler: RPCFakePeer
        let waiter: RPCFakePeer
        let waits: [Int]

        init(children: Int, executor: any Executor = .inline) {
            harness = RPCHarness(executor: executor)
            settler = harness.connect()
            waiter = harness.connect()
            harness.call("create", ["id": "other"], from: settler)
            harness.call("create", ["id": "parent"], from: settler)
            let (harness, settler, waiter) = (harness, settler, waiter)
            waits = (0..<children).map { index in
                harness.call("then", ["id": "parent", "childId": .string("kid\(index)")], from: settler)
                return harness.request("wait", ["id": .string("kid\(index)")], from: waiter)
            }
            waiter.takeMessages()
            harness.registry.settlementRelay.turnBudget = TurnBudget(nanoseconds: 3, clock: RPCTickClock().read)
        }
    }

    @Test("resolving a parent of 10 waited children answers 3 of its news a turn, the waiters in child order")
    func newsPassedOnInSlices() {
        let loop = RPCManualExecutor()
        let setup = Setup(children: 10, executor: loop)
        setup.harness.call("resolve", ["id": "parent", "value": 1], from: setup.settler)
        // Every child settled at once; their news told 3 a turn (the parent's first).
        #expect(setup.harness.state("kid9", from: setup.settler) == "fulfilled")
        var answered = setup.waiter.takeMessages().map { $0["id"] }
        #expect(answered == setup.waits.prefix(2).map { .int($0) })
        loop.runTurn()
        answered += setup.waiter.takeMessages().map { $0["id"] }
        #expect(answered == setup.waits.prefix(5).map { .int($0) })
        loop.drain()
        answered += setup.waiter.takeMessages().map { $0["id"] }
        #expect(answered == setup.waits.map { .int($0) })
    }

    @Test("news heard while earlier news waits for a later turn is passed on after it")
    func laterNewsWaitsBehind() {
        let loop = RPCManualExecutor()
        let setup = Setup(children: 10, executor: loop)
        let otherWait = setup.harness.request("wait", ["id": "other"], from: setup.waiter)
        setup.harness.call("resolve", ["id": "parent", "value": 1], from: setup.settler)
        setup.harness.call("resolve", ["id": "other", "value": 2], from: setup.settler)
        loop.drain()
        let answered = setup.waiter.takeMessages().map { $0["id"] }
        #expect(answered == (setup.waits + [otherWait]).map { .int($0) })
    }

    @Test("with an executor that runs work at once, all news is passed on before the answer returns")
    func inlineExecutorPassesAllOn() {
        let setup = Setup(children: 2_000)
        setup.harness.call("resolve", ["id": "parent", "value": 1], from: setup.settler)
        #expect(setup.waiter.takeMessages().map { $0["id"] } == setup.waits.map { .int($0) })
    }
}
