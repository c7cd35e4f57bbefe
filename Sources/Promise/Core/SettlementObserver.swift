/// An object told when a promise it observes settles, through no closure of
/// its own: the promise keeps the object itself as its handler's follower,
/// so observing allocates nothing.
///
/// For this package's long-lived watchers, which a process may keep pending
/// by the ten thousand (`PromiseClient`'s mirrors of daemon promises, where
/// an `onCancel` closure and its box would be a fifth of each mirror). User
/// code observes with ``Promise/onSettled(on:_:)`` and ``Promise/onCancel(on:_:)``.
///
/// ```swift
/// final class Watcher: PromiseSettlementObserver {
///     let promise = Promise<Int>()
///     func promiseSettled() { if promise.isCancelled { stopWatching() } }
/// }
/// watcher.promise.notifySettlement(to: watcher)
/// ```
package protocol PromiseSettlementObserver: AnyObject, Sendable {
    /// The observed promise has settled: fulfilled, rejected or cancelled
    /// (the promise tells which). Called once, inline: on the thread that
    /// settled it, or on the registering thread when it had settled
    /// already; outside the promise's lock.
    func promiseSettled()
}

extension Promise {
    /// Tells `observer` once when this promise settles, at once if it has;
    /// keeps `observer` until then.
    ///
    /// An observer, as ``onSettled(on:_:)`` is: not a child, so it neither
    /// keeps the promise from being cancelled when its children are, nor is
    /// it cancelled with the tree. A cancel from an ancestor settles this
    /// promise cancelled, and the observer is told of that.
    package func notifySettlement(to observer: any PromiseSettlementObserver) {
        // Captures nothing (no value type either), so it needs no context:
        // the observer comes back as the follower.
        let callback = _Callback(follower: observer, body: _NoBody()) { callback, _, _, _ in
            (callback.follower.object.unsafelyUnwrapped as! any PromiseSettlementObserver).promiseSettled()
        }
        _register(callback, isChild: false)
    }
}
