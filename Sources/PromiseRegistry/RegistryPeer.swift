/// A connection as the registry sees it: where the notifications it asked
/// for go, and what it may hold. Loop thread only.
///
/// The dispatch layer hands each connection over as one of these when it
/// opens (``Registry/connect(_:)``); the registry sends it lines the
/// dispatch layer wrote (``RegistryEventSink``) and knows nothing of their
/// format.
package protocol RegistryPeer: AnyObject {
    /// Unique for the life of the daemon process; never reused.
    var connectionID: UInt64 { get }
    /// False once the connection is closed or was cut off.
    var isOpen: Bool { get }
    /// True for a connection let in past `DaemonLimits.maxConnections`,
    /// into the reserve: it may not hold the daemon's resources while it
    /// waits (`wait` for a pending promise, `subscribe`, following logs,
    /// queueing for a pool slot).
    var isReserved: Bool { get }
    /// Queues one line (its text and the newline that ends it). Returns
    /// false when the connection is gone or was cut off.
    @discardableResult
    func send(_ line: [UInt8]) -> Bool
    /// `bytes` of a line for this connection are held back until what it
    /// tells is stored: they count towards its output limit.
    func hold(bytes: Int)
    /// The held `bytes` are let go: sent right after, or dropped.
    func release(bytes: Int)
    /// The request being handled is refused for what this connection is
    /// (one in the reserve asking to wait): it closes once the answers to
    /// it are written.
    func closeAfterAnswer()
}
