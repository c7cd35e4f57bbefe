extension Promise {
    /// A child that settles as this promise does, unless `duration` passes
    /// first: then it is rejected with ``PromiseError/timedOut``.
    ///
    /// The timeout rejects the child only; this promise and its work carry
    /// on (cancel the child instead of letting it time out to stop them).
    /// A child that timed out takes its handler off this promise, so timing
    /// out again and again on a promise that stays pending keeps memory flat.
    ///
    /// ```swift
    /// let reply = request.timeout(.seconds(2)).recover { _ in .cached }
    /// ```
    public func timeout(_ duration: Duration) -> Promise<Value> {
        let child = then(on: .inline) { $0 }
        let timer = _OneShotTimer(after: duration) { [self] in
            if child.reject(PromiseError.timedOut) { _withdraw(child) }
        }
        child._observe { _ in timer.cancel() }
        return child
    }
}
