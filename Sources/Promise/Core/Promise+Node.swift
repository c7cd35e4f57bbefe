/// How a promise takes part in its tree: cancellation, progress and the
/// debug chain, across promises of different value types.
extension Promise: _PromiseNode {
    @inlinable
    func _cancelFromAncestor(_ work: inout _Worklist) {
        _settle(.failure(CancellationError()), cancelled: true, &work)
    }

    @usableFromInline
    func _childCancelled(_ child: AnyObject?, _ work: inout _Worklist) -> _UpwardStep? {
        let cancellation: Result<Value, any Error> = .failure(CancellationError())
        var withdrawn: _Callback?
        var keepsHandler = false
        let settlement = _withState { state -> _Settlement? in
            guard state.isPending else { return nil }
            if state.uncancelledChildren > 0 {
                state.uncancelledChildren -= 1
                if state.uncancelledChildren == 0 {
                    keepsHandler = state.keepsHandlerWhenCancelled
                    return state.settle(cancellation)
                }
            }
            if let child { withdrawn = state.callbacks.remove(following: child) }
            return nil
        }
        // Released after unlocking: it may hold the last reference to user captures.
        withExtendedLifetime(withdrawn) {}
        guard let settlement else { return nil }
        let parent = settlement.parent.node
        settlement.run(cancellation, cancelled: true, &work)
        return parent.map { _UpwardStep(parent: $0, child: keepsHandler ? nil : self) }
    }

    @usableFromInline
    var _upstream: (any _PromiseNode)? {
        _withState { $0.isPending ? $0.parent.node : nil }
    }

    @usableFromInline
    var _cycleStep: (next: (any _PromiseNode)?, lockedIn: Bool) {
        _withState { state in
            guard state.isPending else { return (nil, false) }
            return (state.cycleHint ?? state.parent.node, state.isLockedIn)
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
