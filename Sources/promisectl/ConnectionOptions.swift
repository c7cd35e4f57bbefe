import ArgumentParser

/// The options every command shares: where the daemon listens.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The daemon's Unix socket (default: $PROMISED_SOCKET, else $XDG_RUNTIME_DIR/promised.sock, else a per-user folder under the temp dir).",
            valueName: "path"),
        completion: .file())
    var socket: String?
}
