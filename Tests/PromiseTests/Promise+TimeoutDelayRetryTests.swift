import Promise
import Testing

@Suite("Promise timeout, delay and retry", .timeLimit(.minutes(5)))
struct PromiseTimeoutDelayRetryTests {
    // MARK: timeout

    @Test("timeout rejects with PromiseError.timedOut when the promise does not settle in time")
    func timeoutFires() async {
        let clock = ContinuousClock()
        let start = clock.now
        let limited = Promise<Int>().timeout(.milliseconds(50))
        #expect(await limited.rejectionError() as? PromiseError == .timedOut)
        #expect(clock.now - start >= .milliseconds(50))
    }

    @Test("timeout passes the value on when the promise fulfils in time")
    func timeoutPassesValue() async {
        let source = Promise<Int>()
        let limited = source.timeout(.seconds(5))
        source.fulfill(4)
        #expect(await limited.fulfilledValue() == 4)
    }

    @Test("timeout passes the error on when the promise rejects in time")
    func timeoutPassesError() async {
        let limited = Promise<Int>(error: TestError.other(4)).timeout(.seconds(5))
        #expect(await limited.rejectionError() as? TestError == .other(4))
    }

    @Test("a value that arrives after the timeout does not change the timed-out result")
    func valueAfterTimeout() async {
        let source = Promise<Int>()
        let limited = source.timeout(.milliseconds(20))
        #expect(await limited.rejectionError() as? PromiseError == .timedOut)
        source.fulfill(1)
        #expect(await holds { limited.errorNow as? PromiseError == .timedOut })
    }

    // MARK: delay

    @Test("delay fulfils with the value no sooner than the delay after the promise fulfilled")
    func delayWaits() async {
        let clock = ContinuousClock()
        let source = Promise<Int>()
        let delayed = source.delay(.milliseconds(80))
        let start = clock.now
        source.fulfill(6)
        #expect(delayed.isPending)
        #expect(await delayed.fulfilledValue() == 6)
        #expect(clock.now - start >= .milliseconds(80))
    }

    @Test("delay passes a rejection on")
    func delayPassesRejection() async {
        let delayed = Promise<Int>(error: TestError.boom).delay(.milliseconds(10))
        #expect(await delayed.rejectionError() as? TestError == .boom)
    }

    @Test("Promise<Void>.delay fulfils after the duration")
    func staticDelay() async {
        let clock = ContinuousClock()
        let start = clock.now
        let timer = Promise<Void>.delay(.milliseconds(60))
        #expect(timer.isPending)
        #expect(await timer.settled() != nil)
        #expect(timer.isFulfilled)
        #expect(clock.now - start >= .milliseconds(60))
    }

    // MARK: retry

    @Test("retry returns the first success, calling the body once per attempt")
    func retrySucceedsAfterFailures() async {
        let calls = Counter()
        let result = Promise<String>.retry(attempts: 3, delay: .milliseconds(1), on: .default) {
            let attempt = calls.add()
            return attempt < 3 ? Promise(error: TestError.other(attempt)) : Promise(value: "ok")
        }
        #expect(await result.fulfilledValue() == "ok")
        #expect(calls.value == 3)
    }

    @Test("retry stops at the first success")
    func retryStopsOnSuccess() async {
        let calls = Counter()
        let result = Promise<Int>.retry(attempts: 5, delay: .milliseconds(1), on: .default) {
            calls.add()
            return Promise(value: 1)
        }
        #expect(await result.fulfilledValue() == 1)
        #expect(await holds { calls.value == 1 })
    }

    @Test("retry rejects with the last error once every attempt failed")
    func retryGivesUp() async {
        let calls = Counter()
        let result = Promise<Int>.retry(attempts: 3, delay: .milliseconds(1), on: .default) {
            let attempt = calls.add()
            return Promise(error: TestError.other(attempt))
        }
        #expect(await result.rejectionError() as? TestError == .other(3))
        #expect(await holds { calls.value == 3 })
    }

    @Test("retry treats an error thrown by the body as a failed attempt")
    func retryBodyThrows() async {
        let calls = Counter()
        let result = Promise<Int>.retry(attempts: 2, delay: .milliseconds(1), on: .default) {
            if calls.add() == 1 { throw TestError.boom }
            return Promise(value: 2)
        }
        #expect(await result.fulfilledValue() == 2)
        #expect(calls.value == 2)
    }

    @Test("cancelling retry's result cancels the attempt in flight and makes no further attempt")
    func cancelRetry() async {
        let calls = Counter()
        let attempt = Promise<Int>()
        let result = Promise<Int>.retry(attempts: 5, delay: .milliseconds(1), on: .default) {
            calls.add()
            return attempt
        }
        #expect(await eventually { calls.value == 1 })
        result.cancel()
        #expect(await attempt.rejectionError() is CancellationError)
        #expect(await holds { calls.value == 1 })
        #expect(result.isCancelled)
    }

    @Test("retry waits the delay between attempts")
    func retryWaitsBetweenAttempts() async {
        let clock = ContinuousClock()
        let start = clock.now
        let result = Promise<Int>.retry(attempts: 3, delay: .milliseconds(40), on: .default) {
            Promise(error: TestError.boom)
        }
        #expect(await result.rejectionError() as? TestError == .boom)
        #expect(clock.now - start >= .milliseconds(80))
    }

    @Test("cancelling retry gives up an attempt's promise that another consumer holds, without cancelling it")
    func retryCancelKeepsSharedAttempt() async {
        let shared = Promise<Int>()
        let other = shared.then { $0 + 1 }
        let started = Counter()
        let retried = Promise<Int>.retry(attempts: 3) { () -> Promise<Int> in
            started.add()
            return shared
        }
        #expect(await eventually { started.value == 1 })
        #expect(await holds { retried.isPending })
        retried.cancel()
        #expect(await holds(for: .milliseconds(100)) { shared.isPending })
        shared.fulfill(1)
        #expect(await other.fulfilledValue() == 2)
        #expect(started.value == 1)
    }

    // MARK: cancelling timeout and delay

    @Test("cancelling a timeout child cancels it, and its source when that has no other child")
    func cancelTimeout() async {
        let source = Promise<Int>()
        let limited = source.timeout(.milliseconds(50))
        #expect(limited.cancel())
        #expect(await source.rejectionError() is CancellationError)
        try? await Task.sleep(for: .milliseconds(100))
        #expect(limited.isCancelled)
    }

    @Test("cancelling Promise.delay leaves it cancelled when the time comes")
    func cancelDelay() async {
        let delayed = Promise<Void>.delay(.milliseconds(30))
        #expect(delayed.cancel())
        try? await Task.sleep(for: .milliseconds(80))
        #expect(delayed.isCancelled)
    }

    @Test("cancelling the delay child of a fulfilled promise cancels it at once, keeping the source's value")
    func cancelDelayChild() async {
        let source = Promise(value: 5)
        let delayed = source.delay(.seconds(10))
        #expect(delayed.cancel())
        #expect(delayed.isCancelled)
        #expect(source.fulfilledNow == 5)
    }
}
