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
        // No lock: a promise being freed is nobody else's any more.
        guard _unsafeState.isPending, !_unsafeState.callbacks.isEmpty else { return }
        let handlerCount = 1 + (_unsafeState.callbacks.rest.array?.count ?? 0)
        var lines = [_summary]
        var node = _unsafeState.parent.node
        var seen: Set<ObjectIdentifier> = []
        while let parent = node, seen.insert(ObjectIdentifier(parent)).inserted {
            lines.append("  ← " + parent._summary)
            node = parent._upstream
        }
        if _unsafeState.parent.node == nil, _parentSerial != 0 {
            lines.append("  ← #\(_parentSerial) (released)")
        }
        let leak = PromiseLeakReport.LeakedPromise(
            serialNumber: serialNumber, name: _unsafeState.name, typeName: _typeName,
            handlerCount: handlerCount, age: made.map { ContinuousClock.now - $0 } ?? .zero,
            chain: lines.joined(separator: "\n"))
        PromiseLeakReport.handler(leak)
    }

    var _pendingChain: String? {
        isPending ? debugDescription : nil
    }

    var _leakName: String? { name }

    var _typeName: String { "Promise<\(Value.self)>" }
}
