/// What a ``PromiseConnection`` tells of the ids something watches: a
/// mirror made by ``PromiseConnection/promise(_:as:cancellingRemote:)``, a
/// ``PromiseWatch`` stream, a published promise. Called on the connection's
/// reader thread, outside its lock; implementations return quickly.
protocol RemoteWatcher: AnyObject, Sendable {
    /// One of its ids settled: the daemon's record of it.
    func settled(_ record: PromiseRecord)
    /// The progress of one of its pending ids moved.
    func progressed(id: String, fraction: Double, message: String?)
    /// Every id it watches has settled; called after the last ``settled(_:)``.
    func finished()
    /// It will hear no more: the connection is gone, or the daemon refused to subscribe.
    func failed(_ error: PromiseConnectionError)
}
