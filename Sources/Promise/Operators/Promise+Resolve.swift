extension Promise {
    /// Adopts `other`'s eventual state (Promises/A+ 2.3): this promise
    /// settles as `other` does.
    ///
    /// This promise becomes a child of `other`: cancelling `other` cancels
    /// it, and cancelling it (when it is `other`'s only child) cancels
    /// `other`. Resolving a promise with itself, or with a promise that waits
    /// on it through any chain of `then`s, adoptions and combinators
    /// (`all`, `allSettled`, `race`, `any` and their variants, whose output
    /// waits on every input), rejects it with ``PromiseError/cycle`` instead
    /// of leaving both pending forever — also when the links of the cycle
    /// are made on several threads at once (`a.resolve(b)` racing
    /// `b.resolve(a)`: one of them is rejected, and the other follows it).
    /// A combinator over this promise counts even when another of its
    /// inputs could still settle it (`race([self, other])`). `forEach`,
    /// `iterate` and `retry` wait on the step promises in flight: resolving
    /// with one of them while a step waits on this promise is a cycle, and a
    /// step that comes to wait on their own result (a step chained from a
    /// promise resolved with it) rejects that result with
    /// ``PromiseError/cycle``.
    ///
    /// ```swift
    /// let cached = Promise<Image>()
    /// cached.resolve(download(url).then { decode($0) })
    /// ```
    ///
    /// From then on the promise is locked in (A+ 2.3.2): `fulfill`, `reject`
    /// and `resolve` return `false`; only `other` — or ``cancel()`` — settles it.
    ///
    /// - Returns: `true` if this promise now follows `other` (or was rejected
    ///   for a cycle); `false` if it had already settled or was already
    ///   resolved with a promise.
    @discardableResult
    public func resolve(_ other: Promise<Value>) -> Bool {
        var work = _Worklist()
        let accepted = _adopt(other, &work)
        work.drain()
        return accepted
    }

    /// Adopts the promise a handler returned, or takes its error.
    @inlinable
    func _adopt(_ returned: Result<Promise<Value>, any Error>) {
        var work = _Worklist()
        _adopt(returned, &work)
        work.drain()
    }

    /// A child cancelled while its handler ran no longer consumes the
    /// promise the handler returned: it counts as a consumer that was
    /// cancelled, so that promise is cancelled unless another holds it.
    @inlinable
    func _adopt(_ returned: Result<Promise<Value>, any Error>, _ work: inout _Worklist) {
        switch returned {
        case .success(let other):
            _markInFlight()
            guard !_adopt(other, &work), isCancelled else { return }
            other._register(other._adoptCallback(adopter: self), isChild: true, inline: true, &work)
            _cancelUpwards(from: _UpwardStep(parent: other, child: self), &work)
        case .failure(let error):
            _settle(.failure(error), &work)
        }
    }

    @inlinable
    @discardableResult
    func _adopt(_ other: Promise<Value>, _ work: inout _Worklist) -> Bool {
        switch _link(to: other) {
        case .refused:
            return false
        case .cycle:
            // Locked in by `_link`, so that nothing but a cancel settles it
            // before this rejection does.
            return _settle(.failure(PromiseError.cycle), &work)
        case .linked:
            other._register(other._adoptCallback(adopter: self), isChild: false, inline: true, &work)
            return true
        }
    }

    /// Checks for a cycle and, if there is none, makes this promise follow
    /// `other`: both in one step under `_AdoptionLock`, so that two
    /// adoptions closing a cycle between them (`a.resolve(b)` racing
    /// `b.resolve(a)`) cannot both pass the check; one of them finds the
    /// other's link.
    @usableFromInline
    func _link(to other: Promise<Value>) -> _LinkOutcome {
        var replaced = _NodeReference(nil)
        let outcome = _AdoptionLock.withLock { () -> _LinkOutcome in
            guard _withState({ $0.isPending && !$0.isLockedIn }) else { return .refused }
            if other._waits(on: self) {
                let lockedIn = _withState { state -> Bool in
                    guard state.isPending, !state.isLockedIn else { return false }
                    state.isLockedIn = true
                    return true
                }
                return lockedIn ? .cycle : .refused
            }
            // Counted as a consumer of `other` before being recorded as
            // following it: a cancel of this promise in between goes up to
            // `other` and must find itself counted, or it takes the count of
            // another consumer and cancels `other` under it.
            let counted = other._withState { state -> Bool in
                guard state.isPending else { return false }
                state.uncancelledChildren += 1
                return true
            }
            let linked = _withState { state -> Bool in
                guard state.isPending, !state.isLockedIn else { return false }
                replaced = state.parent.take()
                state.parent = _NodeReference(other)
                state.isLockedIn = true
                return true
            }
            guard linked else {
                // Never a consumer after all (cancelled meanwhile): uncounted
                // without cancelling.
                if counted {
                    other._withState { if $0.isPending, $0.uncancelledChildren > 0 { $0.uncancelledChildren -= 1 } }
                }
                return .refused
            }
            return .linked
        }
        // The promise followed until now (a `then` parent) is released here,
        // after unlocking: this may be its last reference, and its deinit
        // releases user values and closures whose own deinit may touch this
        // promise, which would spin for ever on its own lock.
        withExtendedLifetime(replaced) {}
        return outcome
    }

    /// True when this promise is `target` or waits on it through a chain of
    /// pending parents — adopting it would then wait forever.
    ///
    /// Runs of locked-in promises on the way are given a hint to the first
    /// ancestor past them, so that the next check from any of them jumps
    /// there (path compression): building a long adoption chain stays linear
    /// instead of walking the whole chain on every `resolve`. Only locked-in
    /// promises are jumped over, and those cannot be `target`, which is
    /// always a promise not yet resolved with another.
    ///
    /// A combinator's output (`all`, `allSettled`, `race`, `any` and their
    /// variants) waits on each of its pending inputs: the walk goes up
    /// through every one of them, each input once. So resolving `a` with
    /// `Promise.all([a, b])`, or with a chain from it, is a cycle, even
    /// where another input could still settle the output (`race([a, b])`):
    /// what `a` would wait on depends on `a` itself.
    @usableFromInline
    func _waits(on target: AnyObject) -> Bool {
        var node: any _PromiseNode = self
        var lockedRun: [any _PromiseNode] = []
        // Combinator inputs still to walk up from; empty (unallocated) on
        // chains without combinators.
        var branches: [any _PromiseNode] = []
        var seen: Set<ObjectIdentifier> = []
        while true {
            if node === target { return true }
            let (next, lockedIn, inputs) = node._cycleStep
            if lockedIn {
                lockedRun.append(node)
            } else {
                Self._compress(lockedRun, to: node)
                lockedRun.removeAll()
            }
            if let inputs {
                for input in inputs._cycleInputs where seen.insert(ObjectIdentifier(input)).inserted {
                    branches.append(input)
                }
            }
            if let next {
                node = next
                continue
            }
            Self._compress(lockedRun, to: node)
            lockedRun.removeAll()
            guard let branch = branches.popLast() else { return false }
            node = branch
        }
    }

    static func _compress(_ run: [any _PromiseNode], to ancestor: any _PromiseNode) {
        for node in run where node !== ancestor {
            node._setCycleHint(ancestor)
        }
    }
}
