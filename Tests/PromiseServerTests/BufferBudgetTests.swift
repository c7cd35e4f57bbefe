@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseServer
import Testing

@Suite("BufferBudget")
struct BufferBudgetTests {
    @Test("growth within the budget asks for nothing; past it, a cut-off")
    func growthPastLimitAsksForCutOff() {
        var budget = BufferBudget(limit: 1_000)
        #expect(budget.changed(by: 600) == .none)
        #expect(budget.changed(by: 400) == .none)
        #expect(budget.total == 1_000)
        #expect(budget.changed(by: 1) == .cutOffLargest)
        #expect(budget.total == 1_001)
    }

    @Test("victims are the largest holders, largest first, until three quarters of the budget")
    func victimsLargestFirstDownToTarget() {
        var budget = BufferBudget(limit: 1_000)
        let sizes: [(id: UInt64, bytes: Int)] = [(1, 100), (2, 500), (3, 50), (4, 300), (5, 250)]
        for size in sizes { _ = budget.changed(by: size.bytes) }
        #expect(budget.total == 1_200)
        #expect(budget.target == 750)
        // 1,200 - 500 = 700 <= 750: one is enough.
        #expect(budget.victims(of: sizes) == [2])
    }

    @Test("victims keep going past the largest when it is not enough, and ties go to the older connection")
    func victimsSeveralAndTies() {
        var budget = BufferBudget(limit: 100)
        let sizes: [(id: UInt64, bytes: Int)] = [(9, 40), (3, 40), (7, 40), (1, 0)]
        for size in sizes { _ = budget.changed(by: size.bytes) }
        // 120 → 80 → 40 <= 75.
        #expect(budget.victims(of: sizes) == [3, 7])
        #expect(budget.victims(of: sizes.reversed()) == [3, 7])
    }

    @Test("no victims while the total is within the budget")
    func noVictimsWithinBudget() {
        var budget = BufferBudget(limit: 100)
        _ = budget.changed(by: 100)
        #expect(budget.victims(of: [(id: 1, bytes: 100)]) == [])
    }

    @Test("freeing the return threshold since the peak asks to give memory back, once")
    func freeingAsksToReturnMemoryOnce() {
        let threshold = BufferBudget.returnThreshold
        var budget = BufferBudget(limit: 10 * threshold)
        #expect(budget.changed(by: 2 * threshold) == .none)
        #expect(budget.changed(by: -(threshold - 1)) == .none)
        #expect(budget.changed(by: -1) == .returnMemory)
        // The peak is now the total: freeing a little more asks for nothing.
        #expect(budget.changed(by: -(threshold - 1)) == .none)
        #expect(budget.total == 1)
    }

    @Test("the default budget is a sixteenth of physical memory, from 64 MiB to 2 GiB")
    func defaultBudgetFromPhysicalMemory() {
        #expect(DaemonLimits.defaultMaxBufferedBytes(physicalMemory: 16 << 30) == 1 << 30)
        #expect(DaemonLimits.defaultMaxBufferedBytes(physicalMemory: 512 << 20) == 64 << 20)
        #expect(DaemonLimits.defaultMaxBufferedBytes(physicalMemory: 0) == 64 << 20)
        #expect(DaemonLimits.defaultMaxBufferedBytes(physicalMemory: 256 << 30) == 2 << 30)
    }
}
