extension Promise {
    /// Runs `body` on `executor` once the promise settles in any way —
    /// fulfilled, rejected or cancelled — without creating a child.
    ///
    /// Unlike ``always(on:_:)``, this observes: nothing is chained after it,
    /// and it does not count as a child, so it neither keeps the promise
    /// from being cancelled when its children are, nor is it cancelled with
    /// the tree. Registered after settling, it still runs, once.
    ///
    /// ```swift
    /// job.onSettled { result in log.info("job finished: \(result)") }
    /// ```
    ///
    /// - Returns: This promise, for chaining.
    @inlinable
    @discardableResult
    public func onSettled(
        on executor: some Executor = .default,
        _ body: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Promise<Value> {
        if executor is InlineExecutor {
            _observe(body)
        } else {
            _observe { result in executor.execute { body(result) } }
        }
        return self
    }
}
