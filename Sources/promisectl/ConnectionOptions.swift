import ArgumentParser
import Foundation
import PromiseRPC

/// The options every command shares: where the daemon listens.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The daemon's Unix socket (default: $PROMISED_SOCKET, else $XDG_RUNTIME_DIR/promised.sock, else a per-user folder under the temp dir).",
            valueName: "path"),
        completion: .file())
    var socket: String?

    /// The socket path, found the way the daemon finds it.
    var resolvedSocketPath: String {
        SocketPath.resolve(explicit: socket)
    }

    /// Connects, waiting for answers without a client-side limit: the daemon
    /// bounds every wait itself, and a CLI is interrupted by its user.
    func connect() throws -> PromiseClient {
        try PromiseClient(socketPath: resolvedSocketPath, timeout: nil)
    }
}
