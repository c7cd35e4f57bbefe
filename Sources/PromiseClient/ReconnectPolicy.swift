/// How a ``ReconnectingPromiseClient`` gets its daemon back after losing it:
/// how long it waits between attempts, and when it gives up.
///
/// A daemon killed with `kill -9` and restarted by its supervisor is gone
/// for as long as the restart takes (loading the store included), usually
/// well under a second; the first attempts are therefore close together,
/// then spaced out up to ``maximumDelay`` so that a daemon gone for long is
/// not hammered. A client gives up once it has been without a connection for
/// ``giveUpAfter``, or when the deadline of what it is doing passes.
///
/// ```swift
/// let policy = ReconnectPolicy(giveUpAfter: .seconds(60))
/// let client = try ReconnectingPromiseClient(socketPath: path, policy: policy)
/// let record = try client.wait(for: "build/lib", timeout: nil)  // survives a restart of the daemon
/// ```
public struct ReconnectPolicy: Sendable, Hashable {
    /// The wait before the first attempt.
    public var initialDelay: Duration
    /// The longest wait between two attempts.
    public var maximumDelay: Duration
    /// How much each wait grows over the one before.
    public var multiplier: Double
    /// How long the client stays without a connection before it gives up;
    /// nil tries forever, `.zero` never reconnects.
    public var giveUpAfter: Duration?

    public init(initialDelay: Duration = .milliseconds(50), maximumDelay: Duration = .seconds(1),
                multiplier: Double = 2, giveUpAfter: Duration? = Self.defaultGiveUpAfter) {
        precondition(initialDelay >= .zero && maximumDelay >= initialDelay && multiplier >= 1,
                     "a backoff starts at 0 or more and grows up to its maximum")
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
        self.giveUpAfter = giveUpAfter
    }

    /// How long a client stays disconnected before giving up, unless told otherwise: 30 s.
    public static let defaultGiveUpAfter: Duration = .seconds(30)

    /// The default: 50 ms, doubling up to 1 s, for at most 30 s.
    public static let `default` = ReconnectPolicy()

    /// Never reconnects: a lost connection is an error at once, as for a plain ``BlockingPromiseClient``.
    public static let never = ReconnectPolicy(giveUpAfter: .zero)

    /// Whether this policy reconnects at all.
    public var reconnects: Bool { giveUpAfter.map { $0 > .zero } ?? true }

    /// The wait before attempt `attempt` (0 for the first).
    public func delay(beforeAttempt attempt: Int) -> Duration {
        var delay = initialDelay
        for _ in 0..<min(attempt, 64) {
            delay = delay * multiplier
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }
}
