extension Promise {
    /// Transforms the fulfilled value.
    ///
    /// `body` runs on `executor` once this promise is fulfilled, never on the
    /// caller's stack (unless `executor` is `.inline`). Its return value
    /// fulfils the returned promise; an error it throws rejects it. If this
    /// promise is rejected, `body` does not run and the returned promise is
    /// rejected with the same error. If this promise is cancelled, the
    /// returned promise is cancelled too.
    ///
    /// ```swift
    /// let length = fetchName().then { name in name.count }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs; ``DefaultExecutor`` by default.
    ///   - body: Maps the value, or throws to reject.
    /// - Returns: A new promise, a child of this one.
    @inlinable
    @discardableResult
    public func then<U: Sendable>(
        on executor: some Executor = .default,
        _ body: @escaping @Sendable (Value) throws -> U
    ) -> Promise<U> {
        let child = Promise<U>(following: self)
        _register(
            _thenCallback(body, child: child, executor: executor), isChild: true,
            inline: type(of: executor) == InlineExecutor.self)
        return child
    }

    /// Continues with another asynchronous step.
    ///
    /// `body` runs on `executor` once this promise is fulfilled and returns a
    /// promise, which the returned promise adopts: it settles as that one
    /// does (Promises/A+ 2.3). Returning a promise that waits on the returned
    /// promise itself rejects it with ``PromiseError/cycle``. A rejection or
    /// cancellation of this promise passes through as in ``then(on:_:)-swift.method``.
    ///
    /// ```swift
    /// let profile = login(user).then { session in fetchProfile(session) }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: Where `body` runs; ``DefaultExecutor`` by default.
    ///   - body: Starts the next step, or throws to reject.
    /// - Returns: A new promise, a child of this one.
    @inlinable
    @discardableResult
    public func then<U: Sendable>(
        on executor: some Executor = .default,
        _ body: @escaping @Sendable (Value) throws -> Promise<U>
    ) -> Promise<U> {
        let child = Promise<U>(following: self)
        _register(
            _thenAdoptCallback(body, child: child, executor: executor), isChild: true,
            inline: type(of: executor) == InlineExecutor.self)
        return child
    }
}
