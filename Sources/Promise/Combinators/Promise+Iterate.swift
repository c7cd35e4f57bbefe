extension Promise {
    /// Runs asynchronous steps one after another, passing each its step
    /// number (0, 1, 2, …), until `step` returns nil (TheraLynx `iterate:`).
    ///
    /// Fulfils with every step's value in order; rejects with the first
    /// error, thrown or from a step's promise, and runs no more steps.
    /// Cancelling the returned promise cancels the step in flight.
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
    private struct State: Sendable {
        var values: [Value] = []
        var current: Promise<Value>?
    }

    private let output: Promise<[Value]>
    private let executor: E
    private let step: @Sendable (Int) throws -> Promise<Value>?
    private let state = _Locked(State())

    init(output: Promise<[Value]>, executor: E, step: @escaping @Sendable (Int) throws -> Promise<Value>?) {
        self.output = output
        self.executor = executor
        self.step = step
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
                    output.fulfill(state.withLock { $0.values })
                    return
                }
                state.withLock { $0.current = next }
                if !output.isPending {
                    next.cancel()
                    return
                }
                guard let result = next.result else {
                    next._observe { [self, number] result in
                        if took(result) { run(step: number + 1) }
                    }
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
            state.withLock { $0.values.append(value) }
            return true
        case .failure(let error):
            output.reject(error)
            return false
        }
    }

    func cancelStep() {
        state.withLock { $0.current }?.cancel()
    }
}
