/// How a promise takes part in ``PromiseLeakReport``.
extension Promise: _LeakWatched {
    /// Starts watching this new pending promise. Out of line: only reached
    /// while the report is on.
    @usableFromInline
    func _startLeakCheck() {
        _withState { $0.isLeakChecked = true }
        _LeakRegistry.watch(self, serialNumber: serialNumber)
    }

    /// Called by `deinit` for a watched promise: forgets it, and reports it
    /// if it dies pending with handlers that will now never run.
    @usableFromInline
    func _endLeakCheck() {
        let made = _LeakRegistry.forget(serialNumber: serialNumber)
        // Read under the lock although nobody else holds this promise any
        // more: the lock is what orders the last writes before this read.
        let (leaked, handlerCount, name, parent) = _withState { state in
            (state.isPending && !state.callbacks.isEmpty,
             state.callbacks.isEmpty ? 0 : 1 + (state.callbacks.rest.array?.count ?? 0),
             state.name, state.parent.node)
        }
        guard leaked else { return }
        let leak = PromiseLeakReport.LeakedPromise(
            serialNumber: serialNumber, name: name, typeName: _typeName,
            handlerCount: handlerCount, age: made.map { ContinuousClock.now - $0 } ?? .zero,
            chain: _chainDescription(upstream: parent))
        PromiseLeakReport.handler(leak)
    }

    var _pendingChain: String? {
        isPending ? debugDescription : nil
    }

    var _leakName: String? { name }

    var _typeName: String { "Promise<\(Value.self)>" }
}
