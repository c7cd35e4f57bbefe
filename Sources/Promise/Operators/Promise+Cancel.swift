extension Promise {
    /// Cancels the promise: rejects it with `CancellationError`, runs its
    /// ``onCancel(on:_:)`` handlers, and cancels every pending descendant.
    ///
    /// Descendants — `then`, `recover` and `always` children, promises that
    /// adopted this one, and theirs — end cancelled without running their
    /// `then`/`recover` handlers; those already settled keep their state.
    /// Upwards, cancelling the last uncancelled child of a pending parent
    /// cancels the parent too, so the work behind a chain stops once no
    /// consumer is left (and so on up to the root).
    ///
    /// ```swift
    /// let download = startDownload()            // its onCancel stops the transfer
    /// let thumbnail = download.then { makeThumbnail($0) }
    /// thumbnail.cancel()                        // download's only child: it is cancelled too
    /// ```
    ///
    /// A promise that has already settled keeps its state, but the cancel is
    /// still forwarded to its descendants that are pending: children whose
    /// handler is queued or running on an executor (the handler does not
    /// start once its child is cancelled; a promise it returns is then
    /// cancelled too, unless another consumer holds it), children adopting
    /// the promise their handler returned, and theirs (RXPromise's rule). So
    /// cancelling the fulfilled root of a pipeline stops what still runs
    /// under it. (Children of `.inline` handlers that settled at once, and
    /// what hangs below them, are not reached.)
    ///
    /// - Returns: `true` if this call settled the promise; `false` if it had
    ///   already settled.
    @discardableResult
    public func cancel() -> Bool {
        let (cancelled, forwardTo) = _cancel()
        _forwardCancel(to: forwardTo)
        return cancelled
    }

    /// Cancels this promise if pending; otherwise returns the children in
    /// flight that the cancel is forwarded to.
    @usableFromInline
    func _cancel() -> (cancelled: Bool, forwardTo: [any _PromiseNode]) {
        let cancellation: Result<Value, any Error> = .failure(CancellationError())
        var keepsHandler = false
        var handsOut = false
        let settlement = _withState { state -> _Settlement? in
            keepsHandler = state.keepsHandlerWhenCancelled
            let settlement = state.settle(cancellation)
            handsOut = settlement != nil && state.callbacksPending
            return settlement
        }
        guard let settlement else { return (false, _childrenInFlight()) }
        var work = _Worklist()
        let parent = settlement.parent.node
        settlement.run(cancellation, cancelled: true, of: self, &work)
        if handsOut { _runLateCallbacks(cancellation, &work) }
        if let parent {
            _cancelUpwards(from: _UpwardStep(parent: parent, child: keepsHandler ? nil : self), &work)
        }
        work.drain()
        return (true, [])
    }

    /// Runs `body` on `executor` if this promise ends cancelled, to stop the
    /// work behind it (TheraLynx's cancel block, RXPromise's forwarding).
    ///
    /// Runs for ``cancel()`` of this promise or of an ancestor, and for a
    /// rejection with `CancellationError`. Registered after the promise was
    /// cancelled, it still runs. It observes: it is not a child, so it does
    /// not keep the promise from being cancelled when its children are.
    ///
    /// ```swift
    /// let promise = Promise<Data>()
    /// let task = session.dataTask(with: url) { … }
    /// promise.onCancel { task.cancel() }
    /// ```
    ///
    /// - Returns: This promise, for chaining.
    @inlinable
    @discardableResult
    public func onCancel(
        on executor: some Executor = .default,
        _ body: @escaping @Sendable () -> Void
    ) -> Promise<Value> {
        _register(_onCancelCallback(body, executor: executor), isChild: false)
        return self
    }
}

extension Promise {
    /// A consumer registered as a child with `key` as its follower gave up:
    /// its handler is withdrawn, and this promise is cancelled if that was
    /// its last uncancelled child (the rule `all` follows for its inputs).
    @usableFromInline
    func _consumerCancelled(_ key: AnyObject) {
        var work = _Worklist()
        _cancelUpwards(from: _UpwardStep(parent: self, child: key), &work)
        work.drain()
    }
}

/// Cancels `children` (children in flight of a settled promise) and, past
/// those that have settled too, theirs. A loop, so long pipelines are safe.
@usableFromInline
func _forwardCancel(to children: [any _PromiseNode]) {
    var next = children
    while let node = next.popLast() {
        next.append(contentsOf: node._cancelOrForward())
    }
}

/// A cancelled child and the parent to tell, on the way up.
@usableFromInline
struct _UpwardStep {
    @usableFromInline let parent: any _PromiseNode
    /// What the child's handler on `parent` is registered with, to withdraw
    /// it; nil to leave it there (an `always` child's).
    @usableFromInline let child: AnyObject?

    @inlinable
    init(parent: any _PromiseNode, child: AnyObject?) {
        self.parent = parent
        self.child = child
    }
}

/// Tells a parent that one of its children was cancelled, and goes on up as
/// long as that cancels the parent too. A loop, so deep chains are safe.
@usableFromInline
func _cancelUpwards(from step: _UpwardStep, _ work: inout _Worklist) {
    var next: _UpwardStep? = step
    while let step = next {
        next = step.parent._childCancelled(step.child, &work)
    }
}
