import Promise
import Testing

/// An executor that keeps what it is given until the test runs it, as an
/// event loop's next turn would.
// @unchecked Sendable: `queue` is only touched with `lock` held (inside `LockedBox`).
final class HeldExecutor: Executor, @unchecked Sendable {
    private let queue = LockedBox<[@Sendable () -> Void]>([])

    func execute(_ work: @escaping @Sendable () -> Void) {
        queue.withLock { $0.append(work) }
    }

    var heldCount: Int { queue.value.count }

    /// Runs what is held, one item at a time, until nothing is; returns
    /// how many items ran.
    @discardableResult
    func runAll() -> Int {
        var ran = 0
        while let work = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
            work()
            ran += 1
        }
        return ran
    }
}

@Suite("DrainBudget", .timeLimit(.minutes(5)))
struct DrainBudgetTests {
    /// A budget that is spent at its second check: 0 ns, so settling
    /// yields after a fixed number of steps (128), whatever the machine.
    func spentBudget(_ executor: HeldExecutor) -> DrainBudget {
        DrainBudget(.zero, resumingOn: executor)
    }

    /// `count` `.inline` children of `parent`, each recording its index.
    func children(of parent: Promise<Int>, _ count: Int, into order: Recorder<Int>) -> [Promise<Int>] {
        (0..<count).map { index in
            parent.then(on: .inline) { value -> Int in
                order.append(index)
                return value + index
            }
        }
    }

    @Test("without a budget, fulfill runs every inline handler before it returns")
    func noBudgetRunsEverythingAtOnce() {
        let parent = Promise<Int>()
        let order = Recorder<Int>()
        let kids = children(of: parent, 5_000, into: order)
        #expect(DrainBudget.current == nil)
        parent.fulfill(1)
        #expect(order.values == Array(0..<5_000))
        #expect(kids.allSatisfy { !$0.isPending })
        #expect(kids[4_999].fulfilledNow == 5_000)
    }

    @Test("a spent budget stops fulfill part-way; the rest runs on its executor, each once and in order")
    func spentBudgetContinuesOnExecutor() {
        let executor = HeldExecutor()
        let parent = Promise<Int>()
        let order = Recorder<Int>()
        let kids = children(of: parent, 5_000, into: order)
        withDrainBudget(spentBudget(executor)) {
            parent.fulfill(1)
        }
        let firstRun = order.count
        #expect(firstRun > 0 && firstRun < 5_000)
        #expect(kids[firstRun].isPending)
        #expect(executor.heldCount == 1)
        let runs = executor.runAll()
        #expect(runs > 1)
        #expect(order.values == Array(0..<5_000))
        #expect(kids.enumerated().allSatisfy { $0.element.fulfilledNow == 1 + $0.offset })
    }

    @Test("a handler registered while the hand-out waits for a later run runs after the waiting ones")
    func lateRegistrationWaitsBehindDeferredHandlers() {
        let executor = HeldExecutor()
        let parent = Promise<Int>()
        let order = Recorder<Int>()
        _ = children(of: parent, 1_000, into: order)
        withDrainBudget(spentBudget(executor)) {
            parent.fulfill(1)
        }
        let late = parent.then(on: .inline) { value -> Int in
            order.append(-1)
            return value
        }
        #expect(late.isPending)
        #expect(!order.values.contains(-1))
        executor.runAll()
        #expect(order.values == Array(0..<1_000) + [-1])
        #expect(late.fulfilledNow == 1)
        // Once the hand-out is over, a new handler runs at once again.
        let after = parent.then(on: .inline) { $0 + 1 }
        #expect(after.fulfilledNow == 2)
    }

    @Test("cancel under a spent budget cancels every child across runs, and their onCancel handlers run once")
    func cancelCarriesOnAcrossRuns() {
        let executor = HeldExecutor()
        let parent = Promise<Int>()
        let cancels = Counter()
        let kids = (0..<3_000).map { _ in
            parent.then(on: .inline) { $0 }.onCancel(on: .inline) { cancels.add() }
        }
        withDrainBudget(spentBudget(executor)) {
            #expect(parent.cancel())
        }
        #expect(parent.isCancelled)
        #expect(kids.contains { $0.isPending })
        executor.runAll()
        #expect(kids.allSatisfy { $0.isCancelled })
        #expect(cancels.value == 3_000)
    }

    @Test("a chain of 20,000 inline links settles across runs to the last link")
    func longChainCarriesOn() {
        let executor = HeldExecutor()
        let root = Promise<Int>()
        var last = root
        for _ in 0..<20_000 { last = last.then(on: .inline) { $0 + 1 } }
        withDrainBudget(spentBudget(executor)) {
            root.fulfill(0)
        }
        #expect(last.isPending)
        #expect(executor.runAll() > 1)
        #expect(last.fulfilledNow == 20_000)
    }

    @Test("cancelling an all over one input repeated 10,000 times cancels that input before cancel returns")
    func cancelOfHugeAllEndsUpwardsAtOnce() {
        let executor = HeldExecutor()
        let input = Promise<Int>()
        let told = Counter()
        for _ in 0..<1_000 { input.onCancel(on: .inline) { told.add() } }
        let all = Promise<Int>.all(Array(repeating: input, count: 10_000))
        withDrainBudget(spentBudget(executor)) {
            all.cancel()
        }
        // Upwards, nothing waits: a restart would not cancel the input again.
        #expect(all.isCancelled)
        #expect(input.isCancelled)
        // Downwards, the input's own handlers go on later.
        #expect(told.value < 1_000)
        executor.runAll()
        #expect(told.value == 1_000)
    }

    @Test("cancelling the tail of a chain of 2,000 all cancels the root before cancel returns")
    func cancelOfCombinatorChainEndsUpwardsAtOnce() {
        let executor = HeldExecutor()
        let root = Promise<Int>()
        var tail = Promise<Int>.all([root]).then(on: .inline) { $0[0] }
        for _ in 1..<2_000 { tail = Promise<Int>.all([tail]).then(on: .inline) { $0[0] } }
        withDrainBudget(spentBudget(executor)) {
            tail.cancel()
        }
        #expect(root.isCancelled)
        executor.runAll()
        #expect(tail.isCancelled)
    }

    @Test("handlers that settle promises with children of their own finish them all across runs")
    func nestedSettlementCarriesOn() {
        let executor = HeldExecutor()
        let parent = Promise<Int>()
        let inner = (0..<20).map { _ in Promise<Int>() }
        let grandchildren = inner.map { promise in (0..<300).map { _ in promise.then(on: .inline) { $0 * 2 } } }
        for (index, promise) in inner.enumerated() {
            parent.then(on: .inline) { value in promise.fulfill(value + index) }
        }
        withDrainBudget(spentBudget(executor)) {
            parent.fulfill(1)
        }
        #expect(grandchildren.joined().contains { $0.isPending })
        executor.runAll()
        for (index, group) in grandchildren.enumerated() {
            #expect(group.allSatisfy { $0.fulfilledNow == 2 * (1 + index) })
        }
    }

    @Test("the budget in force is the innermost one, and none once the outermost has returned")
    func nestedBudgetsRestoreTheOuterOne() {
        let outer = HeldExecutor()
        let inner = HeldExecutor()
        let parent = Promise<Int>()
        let order = Recorder<Int>()
        _ = children(of: parent, 1_000, into: order)
        withDrainBudget(spentBudget(outer)) {
            withDrainBudget(spentBudget(inner)) {
                parent.fulfill(1)
            }
            #expect(DrainBudget.current != nil)
        }
        #expect(DrainBudget.current == nil)
        #expect(outer.heldCount == 0)
        #expect(inner.heldCount == 1)
        inner.runAll()
        #expect(order.values == Array(0..<1_000))
    }

    @Test("a budget long enough for the work leaves nothing for the executor")
    func ampleBudgetRunsEverything() {
        let executor = HeldExecutor()
        let parent = Promise<Int>()
        let order = Recorder<Int>()
        _ = children(of: parent, 1_000, into: order)
        withDrainBudget(DrainBudget(.seconds(60), resumingOn: executor)) {
            parent.fulfill(1)
        }
        #expect(order.values == Array(0..<1_000))
        #expect(executor.heldCount == 0)
    }
}
