/// The handlers of a settled promise that a drain under a ``DrainBudget``
/// had not run when the budget was spent, queued for a later drain.
///
/// Holds the handed-out list and where to go on, so that a list of any
/// length is never copied: each later drain takes up where the last one
/// stopped.
@usableFromInline
final class _DeferredHandOut<Value: Sendable>: _PendingWork {
    @usableFromInline let owner: Promise<Value>
    @usableFromInline let callbacks: [_Callback]
    @usableFromInline let start: Int
    @usableFromInline let cancelled: Bool

    @usableFromInline
    init(owner: Promise<Value>, callbacks: [_Callback], start: Int, cancelled: Bool) {
        self.owner = owner
        self.callbacks = callbacks
        self.start = start
        self.cancelled = cancelled
    }

    @usableFromInline
    func _runPendingCallbacks(_ work: inout _Worklist) {
        owner._resumeHandOut(callbacks, from: start, cancelled, &work)
    }
}

extension Promise {
    @usableFromInline
    func _deferHandOut(_ callbacks: [_Callback], from start: Int, _ cancelled: Bool, _ work: inout _Worklist) {
        _withState { state in
            state.callbacksPending = true
            state.isHandOutDeferred = true
        }
        work.push(_DeferredHandOut(owner: self, callbacks: callbacks, start: start, cancelled: cancelled))
    }

    /// Runs handlers a spent budget deferred, then those registered
    /// meanwhile, in registration order; unless the budget stops it again.
    @usableFromInline
    func _resumeHandOut(_ callbacks: [_Callback], from start: Int, _ cancelled: Bool, _ work: inout _Worklist) {
        let outcome = _withState { state -> _Outcome in
            state.isHandOutDeferred = false
            return state.outcome
        }
        guard let result = outcome.result(as: Value.self) else { return }
        let finished = withUnsafePointer(to: result) {
            _CallbackList.run(callbacks, from: start, UnsafeRawPointer($0), cancelled, self, &work)
        }
        if finished { _runLateCallbacks(result, &work) }
    }
}
