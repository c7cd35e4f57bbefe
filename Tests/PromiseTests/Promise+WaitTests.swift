import Foundation
import Promise
import Testing

/// `wait` blocks its thread, so every call here runs on a thread of its own (`onNewThread`),
/// never on the cooperative pool that other tests and the core may need.
@Suite("Promise.wait", .timeLimit(.minutes(5)))
struct PromiseWaitTests {
    @Test("wait returns the value of a fulfilled promise")
    func waitFulfilled() async {
        let promise = Promise(value: 3)
        let result = await onNewThread { try promise.wait() }
        #expect((try? result?.get()) == 3)
    }

    @Test("wait throws the error of a rejected promise")
    func waitRejected() async {
        let promise = Promise<Int>(error: TestError.other(3))
        let result = await onNewThread { try promise.wait() }
        guard case .failure(let error)? = result else {
            Issue.record("wait should throw, got \(String(describing: result))")
            return
        }
        #expect(error as? TestError == .other(3))
    }

    @Test("wait throws CancellationError for a cancelled promise")
    func waitCancelled() async {
        let promise = Promise<Int>()
        afterDelay(.milliseconds(20)) { promise.cancel() }
        let result = await onNewThread { try promise.wait(timeout: .seconds(5)) }
        guard case .failure(let error)? = result else {
            Issue.record("wait should throw, got \(String(describing: result))")
            return
        }
        #expect(error is CancellationError)
    }

    @Test("wait blocks until a pending promise is fulfilled from another thread")
    func waitPending() async {
        let promise = Promise<String>()
        afterDelay(.milliseconds(30)) {
            promise.fulfill("done")
        }
        let result = await onNewThread { try promise.wait() }
        #expect((try? result?.get()) == "done")
    }

    @Test("wait with a timeout returns the value when it arrives in time")
    func waitWithTimeoutInTime() async {
        let promise = Promise<Int>()
        afterDelay(.milliseconds(20)) { promise.fulfill(8) }
        let result = await onNewThread { try promise.wait(timeout: .seconds(5)) }
        #expect((try? result?.get()) == 8)
    }

    @Test("wait with a timeout throws PromiseError.timedOut and leaves the promise pending")
    func waitTimesOut() async {
        let promise = Promise<Int>()
        let cancelled = Counter()
        promise.onCancel { cancelled.add() }
        let clock = ContinuousClock()
        let start = clock.now
        let result = await onNewThread { try promise.wait(timeout: .milliseconds(60)) }
        let elapsed = clock.now - start
        guard case .failure(let error)? = result else {
            Issue.record("wait should time out, got \(String(describing: result))")
            return
        }
        #expect(error as? PromiseError == .timedOut)
        #expect(elapsed >= .milliseconds(60))
        #expect(elapsed < .seconds(30))  // gave up, rather than waiting for ever
        #expect(promise.isPending)
        #expect(await holds { cancelled.value == 0 })
        // Waiting gave up; the promise still settles normally afterwards.
        promise.fulfill(1)
        let again = await onNewThread { try promise.wait(timeout: .seconds(5)) }
        #expect((try? again?.get()) == 1)
    }

    @Test("wait with a zero timeout on a pending promise times out at once")
    func waitZeroTimeout() async {
        let promise = Promise<Int>()
        let result = await onNewThread(timeout: .seconds(2)) { try promise.wait(timeout: .zero) }
        guard case .failure(let error)? = result else {
            Issue.record("wait should time out, got \(String(describing: result))")
            return
        }
        #expect(error as? PromiseError == .timedOut)
    }

    @Test("wait on the end of a chain run on the default executor")
    func waitOnChain() async {
        let root = Promise<Int>()
        let end = root.then { $0 + 1 }.then { $0 * 3 }
        afterDelay(.milliseconds(10)) { root.fulfill(1) }
        let result = await onNewThread { try end.wait(timeout: .seconds(5)) }
        #expect((try? result?.get()) == 6)
    }

    @Test("several threads can wait on one promise at the same time")
    func manyWaiters() async {
        let promise = Promise<Int>()
        let results = Recorder<Int>()
        afterDelay(.milliseconds(30)) { promise.fulfill(4) }
        let finished = await runOnThreads(6) { _ in
            if let value = try? promise.wait(timeout: .seconds(5)) { results.append(value) }
        }
        #expect(finished)
        #expect(results.values == Array(repeating: 4, count: 6))
    }
}
