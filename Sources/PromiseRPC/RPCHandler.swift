/// What the server hands framed lines to: the JSON-RPC dispatcher in the
/// daemon, a fake in the server's own tests. Loop thread only.
public protocol RPCHandler: AnyObject {
    /// A client connected (after the peer-uid check passed).
    func connectionOpened(_ peer: any RPCPeer)
    /// One complete line, without its "\n" (and without a trailing "\r").
    func handle(line: [UInt8], from peer: any RPCPeer)
    /// The same, with the line's bytes lent for the call only: the server
    /// hands most lines over this way, straight from the bytes it read.
    /// By default, copies them into an array for ``handle(line:from:)-([UInt8],_)``.
    func handle(line: UnsafeRawBufferPointer, from peer: any RPCPeer)
    /// The client is gone: closed, errored, or cut off. Called once per opened peer.
    func connectionClosed(_ peer: any RPCPeer)
    /// The server is stopping: it accepts no one new, and closes the open
    /// connections once `done` is called (or after a bounded wait). The
    /// daemon's dispatcher writes what is left to its store here.
    func stop(_ done: @escaping () -> Void)
}

extension RPCHandler {
    public func handle(line: UnsafeRawBufferPointer, from peer: any RPCPeer) {
        handle(line: Array(line), from: peer)
    }

    /// Nothing to finish: done at once.
    public func stop(_ done: @escaping () -> Void) { done() }
}
