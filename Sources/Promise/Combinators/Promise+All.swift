extension Promise {
    /// Fulfils with every value, in input order, once all inputs are
    /// fulfilled; rejects as soon as one is rejected, with its error.
    ///
    /// An empty input fulfils at once with `[]`. Progress is the mean of the
    /// inputs'. Cancelling the result cancels the inputs it alone consumes.
    ///
    /// ```swift
    /// let pages = Promise.all(urls.map { fetch($0) })
    /// ```
    @inlinable
    public static func all(_ promises: [Promise<Value>]) -> Promise<[Value]> {
        all(promises, policy: .failFast)
    }

    /// Joins the inputs under `policy` (see ``JoinPolicy``).
    ///
    /// ```swift
    /// Promise.all(jobs, policy: .allErrors)      // every failure, not just the first
    /// ```
    @inlinable
    public static func all(_ promises: [Promise<Value>], policy: JoinPolicy) -> Promise<[Value]> {
        guard !promises.isEmpty else { return Promise<[Value]>(value: []) }
        return _Gather<Value, [Value]>.combine(promises) { index, result, state in
            if case .failure(let error) = result, policy == .failFast {
                return .failure(error)
            }
            guard state.remaining == 0 else { return nil }
            var values: [Value] = []
            var failures: [(index: Int, error: any Error)] = []
            for (position, result) in state.results.enumerated() {
                switch result {
                case .success(let value)?: values.append(value)
                case .failure(let error)?: failures.append((position, error))
                case nil: break
                }
            }
            if policy == .allErrors, !failures.isEmpty {
                return .failure(AggregateError(failures: failures))
            }
            return .success(values)
        }
    }

    /// Waits for every input and fulfils with their values in input order,
    /// `nil` where an input was rejected. Never rejects.
    ///
    /// ```swift
    /// let avatars = Promise.allReplacingErrorsWithNil(users.map { fetchAvatar($0) })
    /// ```
    @inlinable
    public static func allReplacingErrorsWithNil(_ promises: [Promise<Value>]) -> Promise<[Value?]> {
        guard !promises.isEmpty else { return Promise<[Value?]>(value: []) }
        return _Gather<Value, [Value?]>.combine(promises) { _, _, state in
            guard state.remaining == 0 else { return nil }
            return .success(state.results.map { try? $0?.get() })
        }
    }

    /// Waits for every input and fulfils with each outcome, in input order.
    /// Never rejects; a cancelled input appears as a `CancellationError`.
    ///
    /// ```swift
    /// let outcomes = Promise.allSettled(checks)
    /// ```
    @inlinable
    public static func allSettled(_ promises: [Promise<Value>]) -> Promise<[Result<Value, any Error>]> {
        guard !promises.isEmpty else { return Promise<[Result<Value, any Error>]>(value: []) }
        return _Gather<Value, [Result<Value, any Error>]>.combine(promises) { _, _, state in
            guard state.remaining == 0 else { return nil }
            return .success(state.results.map { $0! })
        }
    }
}
