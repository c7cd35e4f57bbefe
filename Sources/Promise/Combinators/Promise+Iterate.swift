extension Promise {
    /// Runs asynchronous steps one after another, passing each its step
    /// number (0, 1, 2, …), until `step` returns nil (TheraLynx `iterate:`).
    ///
    /// Fulfils with every step's value in order; rejects with the first
    /// error, thrown or from a step's promise, and runs no more steps.
    /// Cancelling the returned promise cancels the step in flight, unless
    /// other code also consumes that step's promise (as ``all(_:)`` does).
    ///
    /// ```swift
    /// // Fetch pages until one comes back empty.
    /// let pages = Promise.iterate { page in
    ///     page < 100 ? fetchPage(page) : nil
    /// }
    /// ```
    public static func iterate(
        on executor: some Executor = .default,
        _ step: @escaping @Sendable (Int) throws -> Promise<Value>?
    ) -> Promise<[Value]> {
        let output = Promise<[Value]>()
        let iteration = _Iteration(output: output, executor: executor, step: step)
        output.onCancel(on: .inline) { iteration.cancelStep() }
        iteration.run(step: 0)
        return output
    }
}

/// One `iterate` loop: the values so far, and the step in flight.
final class _Iteration<Value: Sendable, E: Executor>: Sendable {
    private let output: Promise<[Value]>
    private let executor: E
    private let step: @Sendable (Int) throws -> Promise<Value>?
    private let values = _Locked<[Value]>([])
    private let inFlight = _ConsumedInputs<Value>()

    init(output: Promise<[Value]>, executor: E, step: @escaping @Sendable (Int) throws -> Promise<Value>?) {
        self.output = output
        self.executor = executor
        self.step = step
        inFlight.watchedBy(output)
    }

    /// Takes steps from `first` on. Steps whose promise is already settled
    /// are taken in this loop, not by recursion, so any number of
    /// synchronous steps is safe.
    func run(step first: Int) {
        executor.execute { [self] in
            var number = first
            while output.isPending {
                let next: Promise<Value>?
                do {
                    next = try step(number)
                } catch {
                    output.reject(error)
                    return
                }
                guard let next else {
                    output.fulfill(values.withLock { $0 })
                    return
                }
                guard let result = next.result else {
                    // Consumed as a child: stopping cancels it only if
                    // nothing else waits on it.
                    let handler = _Callback(follower: self) { [self, number] result, _, _ in
                        inFlight.settled(at: number)
                        if took(result._result(Value.self)) { run(step: number + 1) }
                    }
                    let consumed = inFlight.consume(next, at: number, key: self, output: output, handler)
                    if !consumed { output.reject(PromiseError.cycle) }
                    return
                }
                guard took(result) else { return }
                number += 1
            }
        }
    }

    /// Records a step's outcome; false when the loop must stop.
    private func took(_ result: Result<Value, any Error>) -> Bool {
        switch result {
        case .success(let value):
            values.withLock { $0.append(value) }
            return true
        case .failure(let error):
            output.reject(error)
            return false
        }
    }

    /// Gives up the step in flight, cancelling it if nothing else consumes it.
    func cancelStep() {
        inFlight.stop(key: self)
    }
}
