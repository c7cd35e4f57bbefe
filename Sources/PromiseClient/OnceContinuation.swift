import Synchronization

/// Resumes one continuation exactly once, with whichever comes first: the
/// daemon's answer, or the cancellation of the awaiting task (which may come
/// even before the continuation is installed).
final class OnceContinuation<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var continuation: UnsafeContinuation<Value, any Error>?
        var early: Result<Value, any Error>?
        var resumed = false
    }

    private let state = Mutex(State())

    init() {}

    /// Installs `continuation`, resuming it at once if a result came first.
    func install(_ continuation: UnsafeContinuation<Value, any Error>) {
        let early = state.withLock { state -> Result<Value, any Error>? in
            if let early = state.early {
                state.early = nil
                state.resumed = true
                return early
            }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// Resumes with `result` unless resumed already.
    func resume(with result: Result<Value, any Error>) {
        let continuation = state.withLock { state -> UnsafeContinuation<Value, any Error>? in
            guard !state.resumed else { return nil }
            guard let continuation = state.continuation else {
                if state.early == nil { state.early = result }
                return nil
            }
            state.resumed = true
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: result)
    }
}
