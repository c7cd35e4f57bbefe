import Foundation
import Promise
import Testing

@Suite("Promise and Swift concurrency", .timeLimit(.minutes(5)))
struct PromiseAsyncTests {
    // MARK: await value

    @Test("await value returns the value of a fulfilled promise")
    func awaitFulfilled() async throws {
        let promise = Promise(value: 5)
        #expect(try await promise.value == 5)
    }

    @Test("await value throws the error of a rejected promise")
    func awaitRejected() async {
        let promise = Promise<Int>(error: TestError.other(5))
        await #expect(throws: TestError.other(5)) { try await promise.value }
    }

    @Test("await value throws CancellationError for a cancelled promise")
    func awaitCancelled() async {
        let promise = Promise<Int>()
        promise.cancel()
        await #expect(throws: CancellationError.self) { try await promise.value }
    }

    @Test("await value resumes when a pending promise is fulfilled from another thread")
    func awaitPendingFulfilledLater() async {
        let promise = Promise<String>()
        afterDelay(.milliseconds(20)) {
            promise.fulfill("late")
        }
        let result = await outcome { try await promise.value }
        #expect((try? result?.get()) == "late")
    }

    @Test("many tasks awaiting one promise all resume with its value")
    func manyAwaiters() async {
        let promise = Promise<Int>()
        let results = Recorder<Int>()
        let tasks = (0..<50).map { _ in
            Task {
                if let value = try? await promise.value { results.append(value) }
            }
        }
        promise.fulfill(3)
        #expect(await eventually { results.count == 50 })
        #expect(results.values.allSatisfy { $0 == 3 })
        tasks.forEach { $0.cancel() }
    }

    // MARK: Task cancellation → promise

    @Test("cancelling the awaiting Task throws CancellationError at once and leaves the promise pending")
    func cancellingAwaiterDoesNotCancelPromise() async {
        let promise = Promise<Int>()
        let outcomeBox = LockedBox<Result<Int, any Error>?>(nil)
        let waiter = Task {
            do { outcomeBox.value = .success(try await promise.value) } catch { outcomeBox.value = .failure(error) }
        }
        try? await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        #expect(await eventually { outcomeBox.value != nil })
        if case .failure(let error)? = outcomeBox.value {
            #expect(error is CancellationError)
        } else {
            Issue.record("the cancelled awaiter should throw CancellationError, got \(String(describing: outcomeBox.value))")
        }
        #expect(await holds { promise.isPending })
        // The promise is still usable by others.
        promise.fulfill(1)
        #expect(await promise.fulfilledValue() == 1)
    }

    @Test("an awaiter Task that is already cancelled throws CancellationError without touching the promise")
    func alreadyCancelledAwaiter() async {
        let promise = Promise<Int>()
        let result = await outcome {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await promise.value
        }
        if case .failure(let error)? = result {
            #expect(error is CancellationError)
        } else {
            Issue.record("expected CancellationError, got \(String(describing: result))")
        }
        #expect(promise.isPending)
    }

    @Test("value(cancellingOnTaskCancellation: true) cancels the promise when the awaiting Task is cancelled")
    func cancellingAwaiterCancelsPromiseWhenAsked() async {
        let promise = Promise<Int>()
        let onCancelRan = Counter()
        promise.onCancel { onCancelRan.add() }
        let outcomeBox = LockedBox<Result<Int, any Error>?>(nil)
        let waiter = Task {
            do {
                outcomeBox.value = .success(try await promise.value(cancellingOnTaskCancellation: true))
            } catch {
                outcomeBox.value = .failure(error)
            }
        }
        try? await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        #expect(await promise.rejectionError() is CancellationError)
        #expect(await eventually { onCancelRan.value == 1 })
        #expect(await eventually { outcomeBox.value != nil })
        if case .failure(let error)? = outcomeBox.value {
            #expect(error is CancellationError)
        } else {
            Issue.record("the awaiter should throw CancellationError")
        }
    }

    @Test("value(cancellingOnTaskCancellation: false) behaves like value")
    func cancellingOnTaskCancellationFalse() async {
        let promise = Promise<Int>()
        let waiter = Task { try await promise.value(cancellingOnTaskCancellation: false) }
        try? await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        #expect(await holds { promise.isPending })
        promise.fulfill(2)
        let result = await outcome { try await promise.value(cancellingOnTaskCancellation: false) }
        #expect((try? result?.get()) == 2)
    }

    // MARK: Promise from an async closure

    @Test("a promise made from an async closure fulfils with what the closure returns")
    func asyncClosureFulfils() async {
        let promise = Promise<Int> {
            try await Task.sleep(for: .milliseconds(5))
            return 11
        }
        #expect(await promise.fulfilledValue() == 11)
    }

    @Test("a promise made from an async closure rejects with what the closure throws")
    func asyncClosureRejects() async {
        let promise = Promise<Int> { throw TestError.other(11) }
        #expect(await promise.rejectionError() as? TestError == .other(11))
    }

    @Test("cancelling a promise made from an async closure cancels its Task")
    func cancellingPromiseCancelsTask() async {
        let started = Counter()
        let sawCancellation = Counter()
        let promise = Self.waitingForCancellation(started: started, sawCancellation: sawCancellation)
        #expect(await eventually { started.value == 1 })
        promise.cancel()
        #expect(promise.isCancelled)
        #expect(await eventually { sawCancellation.value == 1 })
        // The closure's late return does not un-cancel the promise.
        #expect(await holds { promise.isCancelled })
    }

    @Test("cancelling the only child of a promise made from an async closure cancels its Task")
    func cancellingChildCancelsTask() async {
        let sawCancellation = Counter()
        let started = Counter()
        let promise = Self.waitingForCancellation(started: started, sawCancellation: sawCancellation)
        let child = promise.then { $0 + 1 }
        #expect(await eventually { started.value == 1 })
        child.cancel()
        #expect(await eventually { sawCancellation.value == 1 })
        #expect(promise.isCancelled)
    }

    /// A promise whose async closure runs until its Task is cancelled (at
    /// most 5 s), counting when it starts and whether it saw the cancellation.
    static func waitingForCancellation(started: Counter, sawCancellation: Counter) -> Promise<Int> {
        Promise<Int> {
            started.add()
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: .seconds(5))
            while !Task.isCancelled && clock.now < deadline {
                try? await Task.sleep(for: .milliseconds(2))
            }
            if Task.isCancelled { sawCancellation.add() }
            return 0
        }
    }

    @Test("await value on a then chain built from async closures")
    func asyncChain() async {
        let chain = Promise<Int> { 20 }.then { $0 + 1 }.then { $0 * 2 }
        let result = await outcome { try await chain.value }
        #expect((try? result?.get()) == 42)
    }
}
