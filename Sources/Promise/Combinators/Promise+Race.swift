extension Promise {
    /// Settles as the first input to settle, fulfilled or rejected.
    ///
    /// Rejects with ``PromiseError/emptyInput`` for no inputs, which could
    /// never settle otherwise.
    ///
    /// ```swift
    /// let answer = Promise.race([primary.query(q), replica.query(q)])
    /// ```
    @inlinable
    public static func race(_ promises: [Promise<Value>]) -> Promise<Value> {
        guard !promises.isEmpty else { return Promise(error: PromiseError.emptyInput) }
        return _Gather<Value, Value>.combine(promises) { _, result, _ in result }
    }

    /// Fulfils with the first input to be fulfilled; rejects with an
    /// ``AggregateError`` only when every input was rejected.
    ///
    /// Rejects with ``PromiseError/emptyInput`` for no inputs.
    ///
    /// ```swift
    /// let mirror = Promise.any(mirrors.map { ping($0) })
    /// ```
    @inlinable
    public static func any(_ promises: [Promise<Value>]) -> Promise<Value> {
        guard !promises.isEmpty else { return Promise(error: PromiseError.emptyInput) }
        return _Gather<Value, Value>.combine(promises) { _, result, state in
            if case .success = result { return result }
            guard state.remaining == 0 else { return nil }
            let failures = state.results.enumerated().compactMap { index, result -> (index: Int, error: any Error)? in
                if case .failure(let error)? = result { return (index, error) }
                return nil
            }
            return .failure(AggregateError(failures: failures))
        }
    }
}
