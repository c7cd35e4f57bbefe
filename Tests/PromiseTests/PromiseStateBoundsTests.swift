import Foundation
@testable import Promise
import Testing

/// What a promise keeps in its state, read through `@testable`: the checks that
/// a process running for months stays bounded, which no public API shows.
@Suite("Promise state stays bounded", .timeLimit(.minutes(1)))
struct PromiseStateBoundsTests {
    // MARK: The child count

    @Test("registering on a settled promise leaves its child count unchanged")
    func registerOnSettledCountsNothing() {
        // Arrange.
        let ready = Promise(value: 1)
        let failed = Promise<Int>(error: TestError.boom)

        // Act: a then per request, for a while.
        for _ in 0..<1_000 {
            ready.then(on: .inline) { $0 }
            ready.recover(on: .inline) { _ in 0 }
            ready.always(on: .inline) { _ in }
            failed.then(on: .inline) { $0 }
        }

        // Assert.
        #expect(ready.uncancelledChildren == 0)
        #expect(failed.uncancelledChildren == 0)
    }

    @Test("cancelling a child of a settled promise leaves its child count unchanged")
    func cancelChildOfSettledCountsNothing() {
        let ready = Promise(value: 1)
        for _ in 0..<100 {
            ready.then { $0 }.cancel()
        }
        #expect(ready.uncancelledChildren == 0)
        #expect(ready.fulfilledNow == 1)
    }

    @Test("the child count of a pending promise follows registrations and cancellations")
    func pendingCountFollowsChildren() async {
        let parent = Promise<Int>()
        let first = parent.then { $0 }
        let second = parent.recover { _ in 0 }
        parent.onCancel {}
        #expect(parent.uncancelledChildren == 2)
        first.cancel()
        #expect(parent.uncancelledChildren == 1)
        #expect(parent.isPending)
        second.cancel()
        #expect(await parent.rejectionError() is CancellationError)
    }
}

extension Promise {
    /// The children counted for the "every child cancelled" rule.
    var uncancelledChildren: Int {
        _withState { $0.uncancelledChildren }
    }
}
