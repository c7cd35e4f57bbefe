/// The handlers of one promise, in registration order.
///
/// The first handler is stored inline, so the common case of one handler
/// allocates no list; an array is made only for a second one (as swift-nio's
/// `CallbackList` does).
@usableFromInline
struct _CallbackList: Sendable {
    @usableFromInline var first: _Callback?
    @usableFromInline var rest = _LaterCallbacks()

    @inlinable
    init() {}

    /// Not `first == nil`: `==` takes the optional by value, so it copies
    /// the handler (three retains, three releases, on every settle:
    /// docs/PERFORMANCE.md); `map` borrows it and compiles to one compare.
    @inlinable
    var isEmpty: Bool { first.map { _ in false } ?? true }

    @inlinable
    mutating func append(_ callback: consuming _Callback) {
        if first == nil {
            first = callback
        } else if rest.array == nil {
            rest.array = [callback]
        } else {
            rest.array!.append(callback)
        }
    }

    /// Empties the list, returning what it held.
    @inlinable
    mutating func take() -> _CallbackList {
        let taken = consume self
        self = _CallbackList()
        return taken
    }

    /// Removes the first handler whose follower is `follower`, keeping the
    /// order of the others, and returns it: the caller releases it after
    /// unlocking, since it may hold the last reference to user captures.
    @inlinable
    mutating func remove(following follower: AnyObject) -> _Callback? {
        if let first, first.follower.object === follower {
            if var later = rest.array.take() {
                self.first = later.removeFirst()
                if !later.isEmpty { rest.array = later }
            } else {
                self.first = nil
            }
            return first
        }
        guard let index = rest.array?.firstIndex(where: { $0.follower.object === follower }) else { return nil }
        let removed = rest.array!.remove(at: index)
        if rest.array!.isEmpty { rest.array = nil }
        return removed
    }

    /// How many handlers the list holds.
    @inlinable
    var count: Int {
        (isEmpty ? 0 : 1) + (rest.array?.count ?? 0)
    }

    /// Removes every handler `shouldRemove` picks, keeping the order of the
    /// others, in one pass; returns the removed ones, for the caller to
    /// release after unlocking.
    @usableFromInline
    mutating func removeAll(where shouldRemove: (borrowing _Callback) -> Bool) -> _CallbackList {
        var kept = _CallbackList()
        var removed = _CallbackList()
        let taken = take()
        if let first = taken.first {
            if shouldRemove(first) { removed.append(first) } else { kept.append(first) }
        }
        for callback in taken.rest.array ?? [] {
            if shouldRemove(callback) { removed.append(callback) } else { kept.append(callback) }
        }
        self = kept
        return removed
    }

    /// Runs every handler with `result`, which must point to the type the
    /// handlers were made for: the result of `owner`, the promise holding
    /// them (a `_PromiseNode`). Once a ``DrainBudget`` is spent, the handlers not run yet go
    /// back to `owner` (`_deferHandOut`) for a later drain.
    @usableFromInline
    consuming func run(
        _ result: UnsafeRawPointer, _ cancelled: Bool, _ owner: AnyObject, _ work: inout _Worklist
    ) {
        guard let first = first.take() else { return }
        first.run(result, cancelled, &work)
        guard let rest = rest.array.take() else { return }
        _ = Self.run(rest, from: 0, result, cancelled, owner, &work)
    }

    /// Runs `callbacks[start...]` as `run` does; returns false when the
    /// budget stopped it and the rest went back to `owner`.
    @usableFromInline
    static func run(
        _ callbacks: [_Callback], from start: Int, _ result: UnsafeRawPointer, _ cancelled: Bool,
        _ owner: AnyObject, _ work: inout _Worklist
    ) -> Bool {
        var index = start
        while index < callbacks.count {
            if work.yields() {
                // Cast here, on the rare path: `owner` comes as a plain
                // reference, since making the existential of a generic
                // promise looks up its witness table at run time, on every
                // settle that has handlers.
                (owner as! any _PromiseNode)._deferHandOut(callbacks, from: index, cancelled, &work)
                return false
            }
            callbacks[index].run(result, cancelled, &work)
            index += 1
        }
        return true
    }

    /// The promises that follow this one (then/recover/always children and
    /// adopters), for progress propagation.
    @inlinable
    var followers: [any _PromiseNode] {
        guard let first else { return [] }
        var nodes: [any _PromiseNode] = []
        if let node = first.followingNode { nodes.append(node) }
        for callback in rest.array ?? [] {
            if let node = callback.followingNode { nodes.append(node) }
        }
        return nodes
    }
}

/// The handlers after the first.
///
/// Nil rather than empty until a second handler comes, so that the common
/// list holds nothing to release; in a struct rather than a bare optional
/// so that it is destroyed directly (see `_NodeReference`).
@usableFromInline
struct _LaterCallbacks: Sendable {
    @usableFromInline var array: [_Callback]?

    @inlinable
    init() {}
}
