/// Withdrawing the handlers of consumers that gave up (a cancelled child, a
/// cancelled combinator output, a timed-out wait) from a pending promise.
///
/// A short list loses the handler at once. A long one keeps it, marked by
/// its follower, and drops all marked handlers in one pass once they make
/// up half the list, or when the promise settles (before anything runs):
/// removing each from the middle of a list of n handlers would cost n,
/// and withdrawing every one of them n², where this costs n in all.
extension _PromiseState {
    /// Lists up to this long lose a withdrawn handler at once.
    @inlinable
    static var eagerWithdrawalLimit: Int { 16 }

    /// Withdraws one handler registered with `follower`; returns what was
    /// taken out of the list, for the caller to release after unlocking.
    @usableFromInline
    mutating func withdraw(following follower: AnyObject) -> _CallbackList {
        let marked = extras?.withdrawnCount ?? 0
        let total = callbacks.count
        guard isPending, marked > 0 || total > Self.eagerWithdrawalLimit else {
            var removed = _CallbackList()
            if let callback = callbacks.remove(following: follower) { removed.append(callback) }
            return removed
        }
        let extras = writableExtras
        extras.withdrawn[ObjectIdentifier(follower), default: _WithdrawnHandlers(follower)].count += 1
        extras.withdrawnCount += 1
        guard extras.withdrawnCount * 2 >= total else { return _CallbackList() }
        return removeWithdrawn()
    }

    /// Drops every handler marked as withdrawn from the list, in one pass
    /// keeping the order of the others; returns them.
    @usableFromInline
    mutating func removeWithdrawn() -> _CallbackList {
        guard let extras, extras.withdrawnCount > 0 else { return _CallbackList() }
        var marks = extras.withdrawn
        extras.withdrawn = [:]
        extras.withdrawnCount = 0
        let removed = callbacks.removeAll { callback in
            guard let follower = callback.follower.object else { return false }
            let id = ObjectIdentifier(follower)
            guard let mark = marks[id], mark.count > 0 else { return false }
            marks[id]!.count -= 1
            return true
        }
        withExtendedLifetime(marks) {}
        return removed
    }
}

/// How many handlers registered with `key` were withdrawn and are still in
/// the list. Holds `key`, so that its identifier names no other object
/// until the handlers are gone.
@usableFromInline
struct _WithdrawnHandlers {
    @usableFromInline let key: AnyObject
    @usableFromInline var count = 0

    @inlinable
    init(_ key: AnyObject) {
        self.key = key
    }
}
