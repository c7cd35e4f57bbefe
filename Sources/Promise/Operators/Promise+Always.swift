extension Promise {
    /// Runs `body` once this promise settles in any way — fulfilled,
    /// rejected or cancelled — and passes the result on.
    ///
    /// The returned promise settles as this one did, after `body` has run
    /// (when cancelled, it is cancelled at once with the rest of the tree,
    /// and `body` still runs). Cancelling the returned promise itself does
    /// not withdraw `body` either: it still runs once this promise settles.
    ///
    /// ```swift
    /// spinner.start()
    /// fetch(url).always(on: .main) { _ in spinner.stop() }
    /// ```
    ///
    /// - Returns: A new promise, a child of this one, with the same outcome.
    @inlinable
    @discardableResult
    public func always(
        on executor: some Executor = .default,
        _ body: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Promise<Value> {
        let child = Promise<Value>(following: self)
        child._withState { $0.keepsHandlerWhenCancelled = true }
        _register(
            _alwaysCallback(body, child: child, executor: executor), isChild: true,
            inline: type(of: executor) == InlineExecutor.self)
        return child
    }
}
