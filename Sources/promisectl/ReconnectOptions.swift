import ArgumentParser
import PromiseClient
import PromiseModel
import PromiseRPC

/// How long `wait`, `watch`, `logs --follow` and `run` keep trying to get the daemon back
/// when it goes away while they are attached (docs/DURABILITY.md,
/// "Clients that reconnect").
struct ReconnectOptions: ParsableArguments {
    @Option(
        name: .customLong("reconnect-timeout"),
        help: ArgumentHelp(
            """
            When the daemon goes away, keep reconnecting for this long (0: do not reconnect), then exit 69: \
            a number of seconds, or with a unit: 90, 10s, 500ms, 2m, 1h (default: \(Int(ReconnectTimeout().seconds))).
            """,
            valueName: "duration"))
    /// Nil when not given, so that a command can refuse it where it does
    /// not apply (`logs` without `--follow`).
    var seconds: CommandDuration?

    func validate() throws { try timeout.validate() }

    /// The plain value (see ``ClientCall``).
    var timeout: ReconnectTimeout { seconds.map { ReconnectTimeout(seconds: $0.seconds) } ?? ReconnectTimeout() }
}

/// `--reconnect-timeout`, as a plain value (see ``ClientCall``).
struct ReconnectTimeout {
    var seconds = Double(ReconnectPolicy.defaultGiveUpAfter.components.seconds)

    func validate() throws {
        if !(seconds >= 0) || !seconds.isFinite {
            throw ValidationError("--reconnect-timeout must be a number of seconds, 0 or more")
        }
    }

    var policy: ReconnectPolicy {
        ReconnectPolicy(giveUpAfter: .milliseconds(Int64((seconds * 1000).rounded())))
    }

    /// `client`, reconnecting as these options say; each lost connection is said on stderr.
    func reconnecting(_ client: BlockingPromiseClient) -> ReconnectingPromiseClient {
        let reconnecting = ReconnectingPromiseClient(adopting: client, policy: policy)
        let shown = seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)"
        if policy.reconnects {
            reconnecting.onDisconnect = { _ in
                Failure.report("lost the daemon; reconnecting (for up to \(shown) s)")
            }
        }
        return reconnecting
    }
}
