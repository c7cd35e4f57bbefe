import Dispatch

extension Promise {
    /// Blocks the calling thread until the promise settles, for command-line
    /// code and tests; returns the value or throws the rejection error.
    ///
    /// Never call it from a handler running on an executor this promise's
    /// settlement depends on, or it deadlocks.
    ///
    /// ```swift
    /// let config = try loadConfig().wait(timeout: .seconds(10))
    /// ```
    ///
    /// - Parameter timeout: How long to wait; nil waits for ever.
    /// - Throws: The rejection error, or ``PromiseError/timedOut`` when the
    ///   time runs out — the promise is then left pending: waiting gives up,
    ///   it does not cancel, and leaves nothing registered on the promise.
    public func wait(timeout: Duration? = nil) throws -> Value {
        if let result { return try result.get() }
        let semaphore = DispatchSemaphore(value: 0)
        // Keyed by the semaphore, to be withdrawn on timeout.
        _register(_Callback(follower: semaphore, body: _NoBody()) { callback, _, _, _ in
            callback.follower(as: DispatchSemaphore.self).signal()
        }, isChild: false)
        if let timeout {
            if semaphore.wait(timeout: .now() + _nanoseconds(timeout)) == .timedOut {
                _withdraw(semaphore)
                throw PromiseError.timedOut
            }
        } else {
            semaphore.wait()
        }
        return try result!.get()
    }
}

/// `Duration` as dispatch's nanoseconds, clamped to what fits.
func _nanoseconds(_ duration: Duration) -> DispatchTimeInterval {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return .nanoseconds(0) }
    guard seconds < Int64(Int.max / 1_000_000_000) - 1 else { return .never }
    return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
}
