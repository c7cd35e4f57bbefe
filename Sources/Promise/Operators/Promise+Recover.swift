extension Promise {
    /// Turns a rejection into a value.
    ///
    /// `body` runs on `executor` when this promise is rejected (a rejection
    /// skips every `then` down to the next `recover`); its value fulfils the
    /// returned promise and an error it throws rejects it. A fulfilled value
    /// passes through without running `body`. When this promise is cancelled
    /// by ``cancel()`` (its own or an ancestor's), the returned promise is
    /// cancelled and `body` does not run: cancellation is not recovered.
    ///
    /// ```swift
    /// let config = loadConfig().recover { _ in Config.defaults }
    /// ```
    ///
    /// - Returns: A new promise, a child of this one.
    @inlinable
    @discardableResult
    public func recover(
        on executor: some Executor = .default,
        _ body: @escaping @Sendable (any Error) throws -> Value
    ) -> Promise<Value> {
        let child = Promise<Value>(following: self)
        _register(
            _recoverCallback(body, child: child, executor: executor), isChild: true,
            inline: type(of: executor) == InlineExecutor.self)
        return child
    }

    /// Turns a rejection into another asynchronous attempt.
    ///
    /// As ``recover(on:_:)-swift.method``, but `body` returns a promise that
    /// the returned promise adopts.
    ///
    /// ```swift
    /// let page = fetch(primary).recover { _ in fetch(mirror) }
    /// ```
    ///
    /// - Returns: A new promise, a child of this one.
    @inlinable
    @discardableResult
    public func recover(
        on executor: some Executor = .default,
        _ body: @escaping @Sendable (any Error) throws -> Promise<Value>
    ) -> Promise<Value> {
        let child = Promise<Value>(following: self)
        _register(
            _recoverAdoptCallback(body, child: child, executor: executor), isChild: true,
            inline: type(of: executor) == InlineExecutor.self)
        return child
    }
}
