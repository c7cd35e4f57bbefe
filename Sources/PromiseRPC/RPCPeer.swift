import PromiseModel

/// A connected client, as the dispatcher and the registry see it.
///
/// Implemented by the server's `Connection`; tests use a fake. Every member is
/// called on the loop thread only.
public protocol RPCPeer: AnyObject {
    /// Unique for the life of the daemon process; never reused.
    var connectionID: UInt64 { get }
    /// False once the connection is closed or was cut off.
    var isOpen: Bool { get }
    /// True for a connection let in past `DaemonLimits.maxConnections`,
    /// into the reserve: it may create, settle and read promises, but not
    /// hold the daemon's resources while it waits (`wait` for a pending
    /// promise, `subscribe`).
    var isReserved: Bool { get }
    /// Queues one serialized JSON-RPC message as a line: its compact JSON
    /// text and the newline that ends it, in one array, so that a message
    /// is one buffer for the socket: a `writev` of the text and a separate
    /// newline costs more than a `write` of both (docs/PERFORMANCE.md).
    /// Returns false when the peer is gone or was cut off for not reading.
    @discardableResult
    func send(_ message: [UInt8]) -> Bool
    /// ``send(_:)`` for a line lent where it was written: valid only during
    /// the call, so the peer copies what it keeps. Spares making an array of
    /// each answer only to write it to the socket and free it.
    @discardableResult
    func send(line: UnsafeRawBufferPointer) -> Bool
    /// ``send(_:)`` for one message made of `parts`, which go out back to
    /// back: their concatenation is the message's text and its newline. A
    /// batch's answer of tens of MiB goes out so, its members' texts copied
    /// once, into the connection's buffer, rather than joined into one array
    /// first.
    @discardableResult
    func send(parts: [ArraySlice<UInt8>]) -> Bool
    /// `bytes` of a message for this peer are held back until what it tells
    /// is stored (`GroupCommit.deliver(_:)`): they count towards
    /// `DaemonLimits.maxOutputBufferBytes` as queued bytes do, so a client
    /// cannot pile up answers behind a slow disk that nothing bounds.
    func hold(bytes: Int)
    /// The held `bytes` are let go: sent right after, or dropped.
    func release(bytes: Int)
    /// The request being handled is refused for what this connection is
    /// (one in the reserve asking to wait): the peer closes once the
    /// answers to it are written, rather than keep a place others need.
    func closeAfterAnswer()
    /// The line being handled goes on in later loop turns (a long batch,
    /// run a slice a turn): the peer handles no further line of this
    /// connection, and reads none, until ``lineFinished()``, so that the
    /// connection's answers keep their order while other clients are served.
    func lineContinues()
    /// The line ``lineContinues()`` kept open has run: the lines held
    /// meanwhile are handled, then reading goes on.
    func lineFinished()
}

extension RPCPeer {
    @discardableResult
    public func send(line: UnsafeRawBufferPointer) -> Bool {
        send(Array(line))
    }

    @discardableResult
    public func send(parts: [ArraySlice<UInt8>]) -> Bool {
        send(joinedLine(parts))
    }

    /// Ordinary connections are not in the reserve.
    public var isReserved: Bool { false }
    /// A peer without an output limit need not count what is held.
    public func hold(bytes: Int) {}
    public func release(bytes: Int) {}
    /// A peer that is not a connection has no place to give up.
    public func closeAfterAnswer() {}
    /// A peer that is not a connection reads no lines of its own to hold.
    public func lineContinues() {}
    public func lineFinished() {}
}

/// `parts` as one array, each part copied whole rather than walked byte by
/// byte as a joined sequence is.
package func joinedLine(_ parts: [ArraySlice<UInt8>]) -> [UInt8] {
    var line: [UInt8] = []
    line.reserveCapacity(parts.reduce(0) { $0 + $1.count })
    for part in parts { line.append(contentsOf: part) }
    return line
}
