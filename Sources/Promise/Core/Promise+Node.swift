/// How a promise takes part in its tree: cancellation, progress and the
/// debug chain, across promises of different value types.
extension Promise: _PromiseNode {
    /// A child already settled forwards the cancel to its children in flight.
    /// Out of line: the cancel path is rare, and inlined into every handler
    /// it adds work to every `then` + `fulfill` that never cancels.
    @usableFromInline
    func _cancelFromAncestor(_ work: inout _Worklist) {
        if !_settle(.failure(CancellationError()), cancelled: true, &work) {
            _forwardCancel(to: _childrenInFlight())
        }
    }

    @usableFromInline
    func _cancelOrForward() -> [any _PromiseNode] {
        _cancel().forwardTo
    }

    @usableFromInline
    func _addChildInFlight(_ child: any _PromiseNode) {
        // The weak reference is made, and gone children are sorted out,
        // outside the lock: reading a weak reference takes a strong one,
        // whose release may free a child whose deinit runs user code.
        let entry = _WeakNode(child)
        var snapshot: [_WeakNode]?
        _withState { state in
            let extras = state.writableExtras
            extras.childrenInFlight.append(entry)
            if extras.childrenInFlight.count >= extras.pruneInFlightAt, !extras.pruningInFlight {
                extras.pruningInFlight = true
                snapshot = extras.childrenInFlight
            }
        }
        guard let snapshot else { return }
        let live = snapshot.filter { $0.node != nil }
        let replaced = _withState { state -> [_WeakNode] in
            let extras = state.writableExtras
            let all = extras.childrenInFlight
            extras.childrenInFlight = live + all[snapshot.count...]
            extras.pruneInFlightAt = max(16, 2 * extras.childrenInFlight.count)
            extras.pruningInFlight = false
            return all
        }
        withExtendedLifetime(replaced) {}
    }

    /// This promise's children in flight that are still alive.
    @usableFromInline
    func _childrenInFlight() -> [any _PromiseNode] {
        let entries = _withState { $0.extras?.childrenInFlight ?? [] }
        return entries.compactMap { $0.node }
    }

    /// Records this promise, pending after its parent settled, among the
    /// parent's children in flight (once), so that cancelling the settled
    /// parent still reaches it. For handlers run on an executor and adopted
    /// promises only: `.inline` children settle before the parent's settle
    /// returns, and the hot path pays nothing for this.
    @usableFromInline
    func _markInFlight() {
        let parent = _withState { state -> (any _PromiseNode)? in
            guard state.isPending, !state.isInFlight else { return nil }
            state.isInFlight = true
            return state.parent.node
        }
        parent?._addChildInFlight(self)
    }

    @usableFromInline
    func _childCancelled(_ child: AnyObject?, _ work: inout _Worklist) -> _UpwardStep? {
        let cancellation: Result<Value, any Error> = .failure(CancellationError())
        var withdrawn: _CallbackList?
        var keepsHandler = false
        var handsOut = false
        let settlement = _withState { state -> _Settlement? in
            guard state.isPending else { return nil }
            if state.uncancelledChildren > 0 {
                state.uncancelledChildren -= 1
                if state.uncancelledChildren == 0 {
                    keepsHandler = state.keepsHandlerWhenCancelled
                    let settlement = state.settle(cancellation)
                    handsOut = state.callbacksPending
                    return settlement
                }
            }
            if let child { withdrawn = state.withdraw(following: child) }
            return nil
        }
        // Released after unlocking: it may hold the last reference to user captures.
        withExtendedLifetime(withdrawn) {}
        guard let settlement else { return nil }
        let parent = settlement.parent.node
        settlement.run(cancellation, cancelled: true, of: self, &work)
        if handsOut { _runLateCallbacks(cancellation, &work) }
        return parent.map { _UpwardStep(parent: $0, child: keepsHandler ? nil : self) }
    }

    @usableFromInline
    var _upstream: (any _PromiseNode)? {
        _withState { $0.isPending ? $0.parent.node : nil }
    }

    @usableFromInline
    var _cycleStep: (next: (any _PromiseNode)?, lockedIn: Bool, inputs: (any _CombinedInputs)?) {
        _withState { state in
            guard state.isPending else { return (nil, false, nil) }
            return (state.cycleHint ?? state.parent.node, state.isLockedIn, state.extras?.combinedInputs)
        }
    }

    @usableFromInline
    func _setCycleHint(_ ancestor: any _PromiseNode) {
        let replaced = _withState { state -> (any _PromiseNode)? in
            guard state.isPending, state.isLockedIn else { return nil }
            defer { state.cycleHint = ancestor }
            return state.cycleHint
        }
        // Released after unlocking, as in `_adopt`.
        withExtendedLifetime(replaced) {}
    }

    @usableFromInline
    func _followProgress(_ fraction: Double) -> [any _PromiseNode] {
        let update = _withState { state -> ([_ProgressObserver], [any _PromiseNode])? in
            guard state.isPending, fraction > state.progress else { return nil }
            state.progress = fraction
            return (state.progressObservers, state.callbacks.followers)
        }
        guard let (observers, followers) = update else { return [] }
        for observer in observers { observer.notify(fraction) }
        return followers
    }

    @usableFromInline
    var _summary: String {
        let (name, outcome) = _withState { ($0.name, $0.outcome) }
        let result = outcome.result(as: Value.self)
        var line = "Promise<\(Value.self)> #\(serialNumber)"
        if let name { line += " \"\(name)\"" }
        line += " generation \(generation): "
        switch result {
        case nil: line += "pending"
        case .success(let value)?: line += "fulfilled(\(value))"
        case .failure(let error)? where error is CancellationError: line += "cancelled"
        case .failure(let error)?: line += "rejected(\(error))"
        }
        return line
    }
}
