import Dispatch

/// Runs a closure once after a delay, unless cancelled first; cancelling
/// releases the closure (and the promise it holds) at once, which
/// `asyncAfter` would keep until the deadline.
final class _OneShotTimer: @unchecked Sendable {  // `lock` guards `source`.
    private let lock = _Locked<Bool>(false)
    private let source: any DispatchSourceTimer

    init(after duration: Duration, _ body: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: .global())
        source.schedule(deadline: .now() + _nanoseconds(duration))
        source.setEventHandler { [source] in
            body()
            source.cancel()
        }
        source.activate()
    }

    /// Stops the timer if it has not fired; harmless afterwards.
    func cancel() {
        let first = lock.withLock { cancelled -> Bool in
            defer { cancelled = true }
            return !cancelled
        }
        if first { source.cancel() }
    }
}
