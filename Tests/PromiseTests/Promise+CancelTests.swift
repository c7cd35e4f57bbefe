import Foundation
import Promise
import Testing

@Suite("Promise.cancel", .timeLimit(.minutes(5)))
struct PromiseCancelTests {
    // MARK: The promise itself

    @Test("cancel rejects a pending promise with CancellationError and returns true")
    func cancelRejectsWithCancellationError() {
        let promise = Promise<Int>()
        #expect(promise.cancel())
        #expect(promise.isCancelled)
        #expect(promise.isRejected)
        #expect(!promise.isPending)
        #expect(!promise.isFulfilled)
        #expect(promise.errorNow is CancellationError)
    }

    @Test("cancel on a fulfilled promise returns false and keeps the value")
    func cancelAfterFulfilment() {
        let promise = Promise(value: 1)
        #expect(!promise.cancel())
        #expect(promise.fulfilledNow == 1)
        #expect(!promise.isCancelled)
    }

    @Test("cancel on a rejected promise returns false and keeps the error")
    func cancelAfterRejection() {
        let promise = Promise<Int>(error: TestError.boom)
        #expect(!promise.cancel())
        #expect(promise.errorNow as? TestError == .boom)
        #expect(!promise.isCancelled)
    }

    @Test("a second cancel returns false")
    func cancelTwice() {
        let promise = Promise<Int>()
        #expect(promise.cancel())
        #expect(!promise.cancel())
        #expect(promise.isCancelled)
    }

    @Test("fulfill and reject after cancel return false and change nothing")
    func settleAfterCancel() {
        let promise = Promise<Int>()
        promise.cancel()
        #expect(!promise.fulfill(1))
        #expect(!promise.reject(TestError.boom))
        #expect(promise.isCancelled)
    }

    // MARK: onCancel

    @Test("cancel runs the onCancel handlers, each once")
    func cancelRunsOnCancel() async {
        let ran = Counter()
        let promise = Promise<Int>()
        promise.onCancel { ran.add() }
        promise.onCancel(on: .inline) { ran.add() }
        promise.cancel()
        #expect(await eventually { ran.value == 2 })
        #expect(await holds { ran.value == 2 })
    }

    @Test("an .inline onCancel handler runs inside cancel, before it returns")
    func inlineOnCancelRunsAtOnce() {
        let ran = Counter()
        let promise = Promise<Int>()
        promise.onCancel(on: .inline) { ran.add() }
        promise.cancel()
        #expect(ran.value == 1)
    }

    @Test("onCancel registered after cancellation still runs")
    func onCancelAfterCancel() async {
        let ran = Counter()
        let promise = Promise<Int>()
        promise.cancel()
        promise.onCancel { ran.add() }
        #expect(await eventually { ran.value == 1 })
    }

    @Test("onCancel does not run when the promise is fulfilled or rejected")
    func onCancelNotOnSettle() async {
        let ran = Counter()
        let fulfilled = Promise<Int>()
        let rejected = Promise<Int>()
        fulfilled.onCancel { ran.add() }
        rejected.onCancel { ran.add() }
        fulfilled.fulfill(1)
        rejected.reject(TestError.boom)
        fulfilled.cancel()
        rejected.cancel()
        Promise<Int>(value: 1).onCancel { ran.add() }
        #expect(await holds(for: .milliseconds(100)) { ran.value == 0 })
    }

    @Test("onCancel returns the promise it observes, so calls can be chained")
    func onCancelReturnsSelf() async {
        let promise = Promise<Int>()
        let returned = promise.onCancel {}
        #expect(returned === promise)
    }

    // MARK: Down the tree

    @Test("cancel cancels pending then descendants without running their handlers")
    func cancelReachesThenDescendants() async {
        let ran = Counter()
        let root = Promise<Int>()
        let child = root.then { value -> Int in ran.add(); return value }
        let grandchild = child.then { value -> Int in ran.add(); return value }
        root.cancel()
        #expect(await grandchild.rejectionError() is CancellationError)
        #expect(child.isCancelled)
        #expect(grandchild.isCancelled)
        #expect(ran.value == 0)
    }

    @Test("cancel reaches recover children: they end cancelled, not recovered")
    func cancelReachesRecoverChildren() async {
        let ran = Counter()
        let root = Promise<Int>()
        let recovered = root.recover { _ -> Int in ran.add(); return 0 }
        let after = recovered.then { $0 + 1 }
        root.cancel()
        #expect(await after.rejectionError() is CancellationError)
        #expect(recovered.isCancelled)
        #expect(await holds { ran.value == 0 })
    }

    @Test("cancel reaches always children and runs their handler with the cancellation")
    func cancelReachesAlwaysChildren() async {
        let seen = Recorder<Bool>()
        let root = Promise<Int>()
        let tail = root.always { result in
            if case .failure(let error) = result { seen.append(error is CancellationError) }
        }
        root.cancel()
        #expect(await tail.rejectionError() is CancellationError)
        #expect(await eventually { seen.count == 1 })
        #expect(seen.values == [true])
    }

    @Test("cancel runs the onCancel handlers of cancelled descendants")
    func cancelRunsDescendantOnCancel() async {
        let ran = Recorder<String>()
        let root = Promise<Int>()
        let child = root.then { $0 }
        let grandchild = child.then { $0 }
        child.onCancel { ran.append("child") }
        grandchild.onCancel { ran.append("grandchild") }
        root.cancel()
        #expect(await eventually { ran.count == 2 })
        #expect(Set(ran.values) == ["child", "grandchild"])
    }

    @Test("descendants that already settled keep their state when an ancestor is cancelled")
    func settledDescendantsKeepState() async {
        let root = Promise<Int>()
        let fulfilledChild = root.then { $0 }
        let rejectedChild = root.then { $0 }
        let pendingChild = root.then { $0 }
        fulfilledChild.fulfill(7)
        rejectedChild.reject(TestError.boom)
        root.cancel()
        #expect(await pendingChild.rejectionError() is CancellationError)
        #expect(fulfilledChild.fulfilledNow == 7)
        #expect(rejectedChild.errorNow as? TestError == .boom)
        #expect(!rejectedChild.isCancelled)
    }

    @Test("a promise adopting the cancelled promise is cancelled too")
    func cancelReachesAdopters() async {
        let source = Promise<Int>()
        let adopter = Promise<Int>()
        adopter.resolve(source)
        source.cancel()
        #expect(await adopter.rejectionError() is CancellationError)
        #expect(adopter.isCancelled)
    }

    @Test("a child promise whose handler returned the cancelled promise ends cancelled")
    func cancelReachesPromiseReturningChild() async {
        let inner = Promise<Int>()
        let child: Promise<Int> = Promise(value: 1).then(on: .inline) { _ in inner }
        inner.cancel()
        #expect(await child.rejectionError() is CancellationError)
        #expect(child.isCancelled)
    }

    @Test("a then child registered after its parent was cancelled is rejected with CancellationError")
    func thenAfterCancel() async {
        let ran = Counter()
        let root = Promise<Int>()
        root.cancel()
        let late = root.then { value -> Int in ran.add(); return value }
        #expect(await late.rejectionError() is CancellationError)
        #expect(late.isCancelled)
        #expect(ran.value == 0)
    }

    @Test("a child cancelled while its handler runs stays cancelled when the handler returns")
    func cancelWhileHandlerRuns() async {
        let handlerStarted = Counter()
        let release = LockedBox(false)
        let child = Promise(value: 1).then { value -> Int in
            handlerStarted.add()
            // Held until released; the deadline only bounds a broken run.
            let deadline = ContinuousClock.now.advanced(by: .seconds(60))
            while !release.value && ContinuousClock.now < deadline { usleep(1_000) }
            return value + 1
        }
        #expect(await eventually { handlerStarted.value == 1 })
        #expect(child.cancel())
        release.value = true
        #expect(await holds { child.isCancelled })
    }

    // MARK: Up the tree

    @Test("cancelling the only child cancels its pending parent and runs the parent's onCancel")
    func onlyChildCancelsParent() async {
        let parentCancelled = Counter()
        let parent = Promise<Int>()
        parent.onCancel { parentCancelled.add() }
        let child = parent.then { $0 }
        child.cancel()
        #expect(await parent.rejectionError() is CancellationError)
        #expect(await eventually { parentCancelled.value == 1 })
    }

    @Test("a parent with two children stays pending when only one is cancelled")
    func oneOfTwoChildrenKeepsParent() async {
        let parentCancelled = Counter()
        let parent = Promise<Int>()
        parent.onCancel { parentCancelled.add() }
        let first = parent.then { $0 }
        let second = parent.then { $0 + 1 }
        first.cancel()
        #expect(await holds(for: .milliseconds(100)) { parent.isPending && second.isPending })
        #expect(parentCancelled.value == 0)
        // The surviving child still gets the value.
        parent.fulfill(1)
        #expect(await second.fulfilledValue() == 2)
        #expect(first.isCancelled)
    }

    @Test("a parent is cancelled once both of its two children are cancelled")
    func bothChildrenCancelParent() async {
        let parentCancelled = Counter()
        let parent = Promise<Int>()
        parent.onCancel { parentCancelled.add() }
        let first = parent.then { $0 }
        let second = parent.recover { _ in 0 }
        first.cancel()
        #expect(await holds { parent.isPending })
        second.cancel()
        #expect(await parent.rejectionError() is CancellationError)
        #expect(await eventually { parentCancelled.value == 1 })
    }

    @Test("then, recover and always children all count as children of the parent")
    func allChildKindsCount() async {
        let parent = Promise<Int>()
        let thenChild = parent.then { $0 }
        let recoverChild = parent.recover { _ in 0 }
        let alwaysChild = parent.always { _ in }
        thenChild.cancel()
        recoverChild.cancel()
        #expect(await holds { parent.isPending })
        alwaysChild.cancel()
        #expect(await parent.rejectionError() is CancellationError)
    }

    @Test("onCancel and onProgress observers do not hold a parent alive")
    func observersAreNotChildren() async {
        let parent = Promise<Int>()
        parent.onCancel {}
        parent.onProgress { _ in }
        let child = parent.then { $0 }
        child.cancel()
        #expect(await parent.rejectionError() is CancellationError)
    }

    @Test("a child that settled normally keeps its parent from being cancelled by its siblings")
    func settledChildIsNotCancelled() async {
        let parent = Promise<Int>()
        let settledChild = parent.then { $0 }
        let cancelledChild = parent.then { $0 }
        settledChild.fulfill(5)
        cancelledChild.cancel()
        #expect(await holds(for: .milliseconds(100)) { parent.isPending })
    }

    @Test("cancelling up the tree is transitive: the root of a single chain is cancelled")
    func cancelUpIsTransitive() async {
        let root = Promise<Int>()
        let middle = root.then { $0 }
        let leaf = middle.then { $0 }
        leaf.cancel()
        #expect(await root.rejectionError() is CancellationError)
        #expect(middle.isCancelled)
    }

    @Test("an already settled parent is not changed when its only child is cancelled")
    func settledParentUnaffected() async {
        let parent = Promise<Int>()
        let inner = Promise<Int>()
        let child: Promise<Int> = parent.then(on: .inline) { _ in inner }
        parent.fulfill(3)
        child.cancel()
        #expect(await holds { parent.fulfilledNow == 3 })
        #expect(child.isCancelled)
    }

    @Test("cancelling an adopter cancels the promise it adopts when that has no other child")
    func cancelAdopterCancelsSource() async {
        let source = Promise<Int>()
        let adopter = Promise<Int>()
        adopter.resolve(source)
        adopter.cancel()
        #expect(await source.rejectionError() is CancellationError)
    }

    @Test("cancelling a child cancels the promise its handler returned when nothing else uses it")
    func cancelChildCancelsReturnedPromise() async {
        let inner = Promise<Int>()
        let child: Promise<Int> = Promise(value: 1).then(on: .inline) { _ in inner }
        child.cancel()
        #expect(await inner.rejectionError() is CancellationError)
    }

    // MARK: Through settled promises

    @Test("cancel on a fulfilled promise returns false, keeps its value and cancels a child whose handler has not started")
    func cancelSettledForwardsToQueuedChild() async {
        // Arrange: the child's handler is queued behind a blocked job.
        let ran = Counter()
        let queue = DispatchQueue(label: "blocked")
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }
        let root = Promise(value: 1)
        let child = root.then(on: queue) { value -> Int in ran.add(); return value }

        // Act.
        let cancelled = root.cancel()
        gate.signal()

        // Assert.
        #expect(!cancelled)
        #expect(root.fulfilledNow == 1)
        #expect(await child.rejectionError() is CancellationError)
        #expect(await holds { ran.value == 0 })
    }

    @Test("cancel on a fulfilled root reaches the promise a step returned, and the steps after it")
    func cancelSettledForwardsThroughAdoption() async {
        let innerCancelled = Counter()
        let inner = Promise<Int>()
        inner.onCancel(on: .inline) { innerCancelled.add() }
        let root = Promise(value: 1)
        let step: Promise<Int> = root.then(on: .inline) { _ in inner }
        let next = step.then { $0 + 1 }
        #expect(!root.cancel())
        #expect(root.fulfilledNow == 1)
        #expect(inner.isCancelled)
        #expect(innerCancelled.value == 1)
        #expect(step.isCancelled)
        #expect(await next.rejectionError() is CancellationError)
    }

    @Test("cancel on a fulfilled root is forwarded through a settled step to the step still queued")
    func cancelSettledForwardsThroughSettledStep() async {
        let ran = Counter()
        let queue = DispatchQueue(label: "blocked")
        let gate = DispatchSemaphore(value: 0)
        let root = Promise(value: 1)
        let first = root.then(on: DispatchQueue.global()) { $0 + 1 }
        #expect(await first.fulfilledValue() == 2)
        queue.async { gate.wait() }
        let second = first.then(on: queue) { value -> Int in ran.add(); return value }
        #expect(!root.cancel())
        gate.signal()
        #expect(await second.rejectionError() is CancellationError)
        #expect(first.fulfilledNow == 2)
        #expect(await holds { ran.value == 0 })
    }

    @Test("a then child cancelled after its parent settled but before its handler started does not run it")
    func cancelledChildSkipsHandler() async {
        let ran = Counter()
        let queue = DispatchQueue(label: "blocked")
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }
        let child = Promise(value: 1).then(on: queue) { value -> Int in ran.add(); return value }
        let recovered = Promise<Int>(error: TestError.boom).recover(on: queue) { _ -> Int in ran.add(); return 0 }
        #expect(child.cancel())
        #expect(recovered.cancel())
        gate.signal()
        let drained = Counter()
        queue.async { drained.add() }
        #expect(await eventually { drained.value == 1 })
        #expect(ran.value == 0)
    }

    @Test("the promise a handler returned is cancelled when its child was cancelled while the handler ran")
    func cancelWhileHandlerRunsCancelsReturnedPromise() async {
        let started = Counter()
        let release = DispatchSemaphore(value: 0)
        let inner = Promise<Int>()
        let child: Promise<Int> = Promise(value: 1).then(on: DispatchQueue.global()) { _ in
            started.add()
            release.wait()
            return inner
        }
        #expect(await eventually { started.value == 1 })
        #expect(child.cancel())
        release.signal()
        #expect(await inner.rejectionError() is CancellationError)
    }

    @Test("a returned promise that another consumer holds is not cancelled with the child")
    func cancelWhileHandlerRunsKeepsSharedReturnedPromise() async {
        let started = Counter()
        let release = DispatchSemaphore(value: 0)
        let shared = Promise<Int>()
        let other = shared.then { $0 }
        let child: Promise<Int> = Promise(value: 1).then(on: DispatchQueue.global()) { _ in
            started.add()
            release.wait()
            return shared
        }
        #expect(await eventually { started.value == 1 })
        #expect(child.cancel())
        release.signal()
        #expect(await holds(for: .milliseconds(100)) { shared.isPending })
        shared.fulfill(4)
        #expect(await other.fulfilledValue() == 4)
    }
}
