import Foundation
import Promise
import Testing

@Suite("Promise.resolve", .timeLimit(.minutes(5)))
struct PromiseResolveTests {
    @Test("resolve releases the promise followed until then outside the lock, so a deinit may touch the resolved promise")
    func resolveReleasesParentOutsideLock() async {
        // Arrange: the child is the only holder of its parent, whose pending
        // handler captures an object that reads the child when it is freed.
        let box = LockedBox<Promise<Int>?>(nil)
        let touched = Counter()
        let child = childOfDroppedParent(touching: box, touched)
        box.value = child

        // Act: adopting releases the parent, its handler and the object.
        let returned = await onNewThread(timeout: .seconds(5)) { child.resolve(Promise(value: 7)) }

        // Assert. A resolve that never returns holds the child's lock for
        // ever: touch the child no more, or the test itself would spin.
        guard let returned else {
            Issue.record("resolve did not return: the deinit spins on the child's lock")
            return
        }
        #expect((try? returned.get()) == true)
        #expect(touched.value == 1)
        #expect(await child.fulfilledValue() == 7)
    }

    @Test("resolving a promise with Promise.all over itself rejects it, and the all, with PromiseError.cycle")
    func resolveWithAllOverItselfIsACycle() async {
        // Arrange.
        let promise = Promise<[Int]>()
        let joined = Promise<Int>.all([promise.then(on: .inline) { $0.count }])

        // Act.
        let accepted = promise.resolve(joined.then(on: .inline) { [$0.count] })

        // Assert.
        #expect(accepted)
        #expect(await promise.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        #expect(await joined.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
    }

    @Test("resolving a promise with Promise.all([a]) directly is a cycle")
    func resolveWithAllOfItselfIsACycle() async {
        let a = Promise<[Int]>()
        let all = Promise<[Int]>.all([a])
        a.resolve(all.then(on: .inline) { $0.flatMap { $0 } })
        #expect(await a.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
    }

    @Test("resolving a promise with a race it takes part in is a cycle, even though another input could settle the race")
    func resolveWithRaceOverItselfIsACycle() async {
        // Arrange.
        let promise = Promise<Int>()
        let other = Promise<Int>()
        let raced = Promise<Int>.race([other, promise.then(on: .inline) { $0 }])

        // Act.
        promise.resolve(raced)

        // Assert.
        #expect(await promise.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        other.fulfill(1)
    }

    // Cycles through the loops (issue 23, item 5): each case hung before,
    // so each waits 5 s at most and fails rather than hangs.

    @Test("resolving a promise with forEach whose step, taken first, waits on that promise rejects both with PromiseError.cycle")
    func resolveWithForEachOverItselfInFlightIsACycle() async {
        // Arrange: the step runs (.inline) and waits on `promise` before the resolve.
        let promise = Promise<[Int]>()
        let loop = Promise<Int>.forEach([1, 2], on: .inline) { _ in promise.then(on: .inline) { $0.count } }

        // Act.
        promise.resolve(loop)

        // Assert.
        #expect(await promise.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        #expect(await loop.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
    }

    @Test("a forEach step chained from the promise resolved with the forEach rejects both with PromiseError.cycle")
    func forEachStepWaitingOnItsOwnResultIsACycle() async {
        // Arrange: the step is taken after the resolve (on .default).
        let promise = Promise<[Int]>()
        let gate = DispatchSemaphore(value: 0)
        let loop = Promise<Int>.forEach([1]) { _ in
            gate.wait()
            return promise.then(on: .inline) { $0.count }
        }

        // Act.
        promise.resolve(loop)
        gate.signal()

        // Assert.
        #expect(await loop.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        #expect(await promise.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
    }

    @Test("a forEach step that comes to adopt the promise resolved with the forEach rejects both with PromiseError.cycle")
    func forEachStepAdoptingItsOwnResultIsACycle() async {
        // Arrange: the step in flight adopts `promise` only once `started` is fulfilled.
        let promise = Promise<[Int]>()
        let started = Promise<Void>()
        let loop = Promise<Int>.forEach([1], on: .inline) { _ in
            started.then(on: .inline) { promise }.then(on: .inline) { $0.count }
        }

        // Act.
        promise.resolve(loop)
        started.fulfill(())

        // Assert.
        #expect(await loop.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        #expect(await promise.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
    }

    @Test("resolving a promise with iterate whose step waits on that promise rejects it with PromiseError.cycle, before or after the step is taken")
    func iterateOverItselfIsACycle() async {
        // Arrange: one loop takes its step (.inline) before the resolve, one after (.default).
        let early = Promise<[Int]>()
        let earlyLoop = Promise<Int>.iterate(on: .inline) { index in
            index == 0 ? early.then(on: .inline) { $0.count } : nil
        }
        let late = Promise<[Int]>()
        let gate = DispatchSemaphore(value: 0)
        let lateLoop = Promise<Int>.iterate { index in
            gate.wait()
            return index == 0 ? late.then(on: .inline) { $0.count } : nil
        }

        // Act.
        early.resolve(earlyLoop)
        late.resolve(lateLoop)
        gate.signal()

        // Assert.
        #expect(await early.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        #expect(await late.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        #expect(await lateLoop.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
    }

    @Test("resolving a promise with a retry of that promise rejects it with PromiseError.cycle; an attempt that waits on the retry's own result is not retried")
    func retryOverItselfIsACycle() async {
        // Arrange: one retry takes its attempt (.inline) before the resolve, one after (.default).
        let earlyAttempts = Counter()
        let early = Promise<Int>()
        let earlyRetry = Promise<Int>.retry(attempts: 3, on: .inline) {
            earlyAttempts.add()
            return early
        }
        let attempts = Counter()
        let late = Promise<Int>()
        let gate = DispatchSemaphore(value: 0)
        let lateRetry = Promise<Int>.retry(attempts: 3) {
            gate.wait()
            attempts.add()
            return late.then(on: .inline) { $0 }
        }

        // Act.
        early.resolve(earlyRetry)
        late.resolve(lateRetry)
        gate.signal()

        // Assert.
        #expect(await early.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        #expect(await late.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        #expect(await lateRetry.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        // The resolve rejected `early`: each attempt then failed with .cycle.
        #expect(await earlyRetry.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        #expect(earlyAttempts.value == 3)
        #expect(attempts.value == 1)
    }

    @Test("resolving with a combinator over other promises is plain adoption")
    func resolveWithUnrelatedCombinatorAdopts() async {
        // Arrange.
        let promise = Promise<[Int]>()
        let first = Promise<Int>()
        let second = Promise<Int>()

        // Act.
        let accepted = promise.resolve(Promise.all([first, second.then(on: .inline) { $0 * 10 }]))
        first.fulfill(1)
        second.fulfill(2)

        // Assert.
        #expect(accepted)
        #expect(await promise.fulfilledValue(within: .seconds(5)) == [1, 20])
    }
}
