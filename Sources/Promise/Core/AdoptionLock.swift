import Synchronization

/// One process-wide lock around the cycle check and the link of every
/// adoption (`resolve`, and a handler returning a promise).
///
/// The check ("does `other` wait on me?") and the link ("I now wait on
/// `other`") must be one step: run apart, `a.resolve(b)` and `b.resolve(a)`
/// on two threads each checked before the other linked, both passed, and
/// the two promises waited on each other for ever (and the next check that
/// walked into them never ended). Per-promise locks cannot make the step
/// atomic, since the check walks a whole chain; one lock for all adoptions
/// can, and adoptions are rare next to `then`s (no `then`, `fulfill` or
/// `cancel` takes it).
///
/// Re-entrant on the thread that holds it: the check may release the last
/// reference to a promise, whose deinit may run user code that resolves a
/// promise; that nested adoption runs under the hold it is already inside.
@usableFromInline
enum _AdoptionLock {
    static let mutex = Mutex<Void>(())
    /// The thread holding `mutex`, or 0.
    static let owner = Atomic<UInt>(0)

    /// Runs `body` holding the lock.
    @usableFromInline
    static func withLock<R>(_ body: () -> R) -> R {
        let me = _currentThread()
        if owner.load(ordering: .relaxed) == me { return body() }
        return mutex.withLock { _ in
            owner.store(me, ordering: .relaxed)
            defer { owner.store(0, ordering: .relaxed) }
            return body()
        }
    }
}

/// What `_link(to:)` did.
@usableFromInline
enum _LinkOutcome: Sendable {
    /// Now follows the other promise (locked in, counted as its consumer).
    case linked
    /// The other promise waits on this one: this one is locked in, to be
    /// rejected with ``PromiseError/cycle`` by the caller.
    case cycle
    /// Already settled or already resolved with a promise: nothing changed.
    case refused
}
