/// The pending promises a sequential combinator (`forEach`, `iterate`,
/// `retry`) consumes, and stopping them by the counted rule `all` follows.
///
/// Those promises come from user code and may be shared (a cached request
/// returned for several elements): calling `cancel()` on them would cancel
/// work other code still waits for. Each is
/// consumed as a child keyed by the combinator, so stopping withdraws that
/// child and cancels the promise only if it was its last consumer.
///
/// Stopping and consuming may race: a promise is recorded before its
/// handler is registered, and whichever side sees the other's step last
/// gives the consumer up, exactly once. (Giving up a settled promise changes
/// nothing, so a handler that ran meanwhile is harmless.)
final class _ConsumedInputs<Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        let promise: Promise<Value>
        var registered: Bool
    }

    private struct State: Sendable {
        var entries: [Int: Entry] = [:]
        var stopped = false
    }

    private let state = _Locked(State())

    /// Consumes `promise` for slot `index` with `handler`, whose follower
    /// must be `key`. Once stopped, `handler` is not registered and the
    /// promise is given up at once, as a consumer that was cancelled.
    ///
    /// Returns false, consuming nothing, when `promise` waits on `output`,
    /// the combinator's own result (a step chained from a promise resolved
    /// with that result): the combinator would wait on itself for ever, and
    /// rejects with ``PromiseError/cycle`` instead. Recording the promise
    /// (which the cycle check of `resolve` walks, see `_CombinedInputs`) and
    /// this check are one step under `_AdoptionLock`, so that a `resolve`
    /// closing the cycle meanwhile is seen by one side or the other.
    func consume(
        _ promise: Promise<Value>, at index: Int, key: any AnyObject & Sendable, output: AnyObject,
        _ handler: _Callback
    ) -> Bool {
        let step = _AdoptionLock.withLock { () -> _ConsumeStep in
            let recorded = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.entries[index] = Entry(promise: promise, registered: false)
                return true
            }
            guard recorded else { return .stopped }
            guard promise._waits(on: output) else { return .recorded }
            state.withLock { state in
                if state.entries[index]?.promise === promise { state.entries[index] = nil }
            }
            return .cycle
        }
        switch step {
        case .cycle:
            return false
        case .stopped:
            promise._register(_Callback(follower: key, body: _NoBody()) { _, _, _, _ in }, isChild: true)
            promise._consumerCancelled(key)
            return true
        case .recorded:
            break
        }
        promise._register(handler, isChild: true)
        let stoppedMeanwhile = state.withLock { state -> Bool in
            guard state.entries[index]?.promise === promise else { return state.stopped }
            state.entries[index]!.registered = true
            return false
        }
        if stoppedMeanwhile { promise._consumerCancelled(key) }
        return true
    }

    /// Forgets slot `index`, whose promise has settled.
    func settled(at index: Int) {
        state.withLock { $0.entries[index] = nil }
    }

    /// Stops consuming: every pending promise loses this consumer (and is
    /// cancelled if it had no other). Later `consume` calls register nothing.
    func stop(key: AnyObject) {
        let registered = state.withLock { state -> [Promise<Value>] in
            state.stopped = true
            defer { state.entries = [:] }
            return state.entries.values.filter(\.registered).map(\.promise)
        }
        for promise in registered { promise._consumerCancelled(key) }
    }
}

/// What `consume` found under the adoption lock.
private enum _ConsumeStep {
    case recorded, stopped, cycle
}

/// The promises in flight are the inputs a combinator's result waits on,
/// for the cycle check of `resolve` (set as the result's `combinedInputs`
/// with `_CombinedInputs.watchedBy(_:)`).
extension _ConsumedInputs: _CombinedInputs {
    var _cycleInputs: [any _PromiseNode] {
        state.withLock { $0.entries.values.map(\.promise) }
    }
}
