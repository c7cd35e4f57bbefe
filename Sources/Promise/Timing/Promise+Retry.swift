extension Promise {
    /// Runs `body` until the promise it returns is fulfilled, at most
    /// `attempts` times, waiting `delay` between attempts.
    ///
    /// Fulfils with the first success; rejects with the last attempt's
    /// error. Cancelling the returned promise cancels the attempt in flight
    /// (unless other code also consumes its promise, as with ``all(_:)``)
    /// and stops retrying.
    ///
    /// ```swift
    /// let response = Promise.retry(attempts: 3, delay: .milliseconds(200)) { send(request) }
    /// ```
    ///
    /// - Parameters:
    ///   - attempts: How many times to try, at least 1.
    ///   - delay: The pause after a failed attempt.
    ///   - executor: Where `body` runs.
    public static func retry(
        attempts: Int,
        delay: Duration = .zero,
        on executor: some Executor = .default,
        _ body: @escaping @Sendable () throws -> Promise<Value>
    ) -> Promise<Value> {
        let output = Promise<Value>()
        let retry = _Retry(output: output, attempts: max(attempts, 1), delay: delay, executor: executor, body: body)
        output.onCancel(on: .inline) { retry.cancelAttempt() }
        retry.start(attempt: 1)
        return output
    }
}

/// One retry loop: the output, and the attempt in flight (to cancel it).
final class _Retry<Value: Sendable, E: Executor>: Sendable {
    private let output: Promise<Value>
    private let attempts: Int
    private let delay: Duration
    private let executor: E
    private let body: @Sendable () throws -> Promise<Value>
    private let inFlight = _ConsumedInputs<Value>()

    init(output: Promise<Value>, attempts: Int, delay: Duration, executor: E,
         body: @escaping @Sendable () throws -> Promise<Value>) {
        self.output = output
        self.attempts = attempts
        self.delay = delay
        self.executor = executor
        self.body = body
        inFlight.watchedBy(output)
    }

    func start(attempt: Int) {
        executor.execute { [self] in
            guard output.isPending else { return }
            let promise: Promise<Value>
            do {
                promise = try body()
            } catch {
                finish(attempt: attempt, .failure(error))
                return
            }
            // Consumed as a child: stopping cancels it only if nothing else
            // waits on it.
            // An attempt that waits on the output itself is no failure to
            // retry: no attempt can settle it.
            let consumed = inFlight.consume(
                promise, at: attempt, key: self, output: output, _Callback(follower: self) { [self] result, _, _ in
                    inFlight.settled(at: attempt)
                    finish(attempt: attempt, result._result(Value.self))
                })
            if !consumed { output.reject(PromiseError.cycle) }
        }
    }

    /// Gives up the attempt in flight, cancelling it if nothing else consumes it.
    func cancelAttempt() {
        inFlight.stop(key: self)
    }

    private func finish(attempt: Int, _ result: Result<Value, any Error>) {
        switch result {
        case .success(let value):
            output.fulfill(value)
        case .failure(let error):
            guard attempt < attempts, output.isPending else {
                output.reject(error)
                return
            }
            if delay == .zero {
                start(attempt: attempt + 1)
            } else {
                Promise<Void>.delay(delay)._observe { [self] _ in start(attempt: attempt + 1) }
            }
        }
    }
}
