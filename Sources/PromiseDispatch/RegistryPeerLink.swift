import PromiseRPC
import PromiseRegistry

/// A connection of the server (an ``RPCPeer``) as the registry sees it
/// (a `RegistryPeer`): the registry knows nothing of the wire, so the
/// dispatcher hands it each connection through one of these.
final class RegistryPeerLink: RegistryPeer {
    let peer: any RPCPeer

    init(_ peer: any RPCPeer) {
        self.peer = peer
    }

    var connectionID: UInt64 { peer.connectionID }
    var isOpen: Bool { peer.isOpen }
    var isReserved: Bool { peer.isReserved }

    @discardableResult
    func send(_ line: [UInt8]) -> Bool { peer.send(line) }

    func hold(bytes: Int) { peer.hold(bytes: bytes) }
    func release(bytes: Int) { peer.release(bytes: bytes) }
    func closeAfterAnswer() { peer.closeAfterAnswer() }
}

@available(*, unavailable)
extension RegistryPeerLink: Sendable {}
