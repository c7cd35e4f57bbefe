extension Promise {
    /// Reports how far the work behind this promise has come, from 0 to 1
    /// (OAPromise).
    ///
    /// Progress never goes backwards: a value below the current one is
    /// ignored, values are clamped to 0…1, and NaN is ignored. The promise's
    /// own ``progress`` is updated before this returns; `onProgress`
    /// observers are told on their executors, and pending `then` children
    /// follow. Fulfilling a promise sets its progress to 1; after settling,
    /// reports are ignored.
    ///
    /// ```swift
    /// for (index, chunk) in chunks.enumerated() {
    ///     upload(chunk)
    ///     promise.reportProgress(Double(index + 1) / Double(chunks.count))
    /// }
    /// ```
    public func reportProgress(_ fraction: Double) {
        guard !fraction.isNaN else { return }
        let clamped = min(max(fraction, 0), 1)
        var followers = _followProgress(clamped)
        while let follower = followers.popLast() {
            followers.append(contentsOf: follower._followProgress(clamped))
        }
    }

    /// The last reported progress, 0…1; 0 for a new promise, 1 once fulfilled.
    @inlinable
    public var progress: Double {
        _withState { $0.progress }
    }

    /// Calls `body` on `executor` with each new progress value.
    ///
    /// If some progress was already made (or the promise has settled), `body`
    /// is first called with the current value. It observes: it is not a
    /// child, so it does not keep the promise from being cancelled.
    ///
    /// ```swift
    /// upload.onProgress(on: .main) { bar.value = $0 }
    /// ```
    ///
    /// - Returns: This promise, for chaining.
    @discardableResult
    public func onProgress(
        on executor: some Executor = .default,
        _ body: @escaping @Sendable (Double) -> Void
    ) -> Promise<Value> {
        let observer = _ProgressObserver(on: executor, body)
        let current = _withState { state -> Double in
            if state.isPending { state.addProgressObserver(observer) }
            return state.progress
        }
        if current > 0 { observer.notify(current) }
        return self
    }
}
