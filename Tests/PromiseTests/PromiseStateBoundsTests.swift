import Foundation
@testable import Promise
import Testing

/// What a promise keeps in its state, read through `@testable`: the checks that
/// a process running for months stays bounded, which no public API shows.
@Suite("Promise state stays bounded", .timeLimit(.minutes(5)))
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

    // MARK: Giving up leaves nothing behind

    @Test("timed-out waits leave no handler on the pending promise")
    func timedOutWaitsWithdraw() async {
        // Arrange.
        let promise = Promise<Int>()

        // Act.
        let timedOut = await onNewThread { () -> Int in
            var count = 0
            for _ in 0..<1_000 {
                do { _ = try promise.wait(timeout: .zero) } catch PromiseError.timedOut { count += 1 }
            }
            return count
        }

        // Assert: none left, and a later wait still sees the value.
        #expect((try? timedOut?.get()) == 1_000)
        #expect(promise.registeredHandlers == 0)
        promise.fulfill(5)
        #expect((try? await onNewThread { try promise.wait(timeout: .seconds(5)) }?.get()) == 5)
    }

    @Test("awaits whose tasks were cancelled leave no handler on the pending promise")
    func cancelledAwaitsWithdraw() async {
        let promise = Promise<Int>()
        let tasks = (0..<200).map { _ in Task { try await promise.value } }
        #expect(await eventually { promise.registeredHandlers == 200 })
        for task in tasks { task.cancel() }
        for task in tasks {
            await #expect(throws: CancellationError.self) { try await task.value }
        }
        #expect(promise.registeredHandlers == 0)
        #expect(promise.isPending)
    }

    @Test("an await cancelled before it registers leaves no handler")
    func awaitCancelledEarlyWithdraws() async {
        let promise = Promise<Int>()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await promise.value
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(promise.registeredHandlers == 0)
    }

    @Test("timeout children that fired leave no handler on the pending promise")
    func firedTimeoutsWithdraw() async {
        let promise = Promise<Int>()
        let children = (0..<100).map { _ in promise.timeout(.milliseconds(1)) }
        for child in children {
            #expect(await child.rejectionError() as? PromiseError == .timedOut)
        }
        #expect(await eventually { promise.registeredHandlers == 0 })
        #expect(promise.isPending)
    }

    @Test("cancelled then children of a parent that stays pending withdraw their handlers")
    func cancelledChildrenWithdraw() async {
        // Arrange: one child that stays keeps the parent pending.
        let ran = Counter()
        let parent = Promise<Int>()
        let kept = parent.then(on: .inline) { $0 }

        // Act.
        for _ in 0..<100 {
            parent.then(on: .inline) { value -> Int in ran.add(); return value }.cancel()
            parent.recover(on: .inline) { _ in 0 }.cancel()
        }

        // Assert.
        #expect(parent.registeredHandlers == 1)
        #expect(parent.uncancelledChildren == 1)
        parent.fulfill(1)
        #expect(kept.fulfilledNow == 1)
        #expect(ran.value == 0)
    }

    @Test("a cancelled combinator withdraws its handlers from inputs that stay pending")
    func cancelledCombinatorWithdraws() {
        let input = Promise<Int>()
        let kept = input.then(on: .inline) { $0 }
        for _ in 0..<100 {
            Promise.all([input, Promise<Int>()]).cancel()
        }
        #expect(input.registeredHandlers == 1)
        input.fulfill(2)
        #expect(kept.fulfilledNow == 2)
    }

    @Test("a cancelled always child keeps its handler: it runs once the parent settles")
    func cancelledAlwaysChildKeepsHandler() async {
        let ran = Counter()
        let parent = Promise<Int>()
        let kept = parent.then { $0 }
        parent.always { _ in ran.add() }.cancel()
        #expect(parent.isPending)
        parent.fulfill(1)
        #expect(await kept.fulfilledValue() == 1)
        #expect(await eventually { ran.value == 1 })
    }

}

extension Promise {
    /// The children counted for the "every child cancelled" rule.
    var uncancelledChildren: Int {
        _withState { $0.uncancelledChildren }
    }

    /// How many handlers wait on the promise.
    var registeredHandlers: Int {
        _withState { state in
            state.callbacks.isEmpty ? 0 : 1 + (state.callbacks.rest.array?.count ?? 0)
        }
    }
}
