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
    /// - Returns: `true` if this call settled the promise; `false` if it had
    ///   already settled.
    @discardableResult
    public func cancel() -> Bool {
        let cancellation: Result<Value, any Error> = .failure(CancellationError())
        var keepsHandler = false
        let settlement = _withState { state -> _Settlement? in
            keepsHandler = state.keepsHandlerWhenCancelled
            return state.settle(cancellation)
        }
        guard let settlement else { return false }
        var work = _Worklist()
        let parent = settlement.parent.node
        settlement.run(cancellation, cancelled: true, &work)
        if let parent {
            _cancelUpwards(from: _UpwardStep(parent: parent, child: keepsHandler ? nil : self), &work)
        }
        work.drain()
        return true
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
