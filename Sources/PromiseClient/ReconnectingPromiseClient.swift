import PromiseJSON
#if canImport(Glibc)
import Glibc
#endif

/// A ``BlockingPromiseClient`` that connects again when the daemon goes away
/// (`kill -9`, a crash, an upgrade) and carries on where it was.
///
/// Connections do not survive the daemon, but promises do (a durable daemon
/// restores them), and `wait` and `subscribe` answer at once for a promise
/// that settled meanwhile: asking again on a new connection loses nothing.
/// This client does that asking again. Only the first connection is not
/// retried: a daemon that is not running at all is reported at once.
///
/// What is retried must be safe to send twice: ``wait(for:timeout:)``,
/// `get`, `subscribe` (``subscribe(_:)``), or ``withReconnects(until:_:)``
/// around a call of your own. A `resolve` or `reject` whose answer was lost
/// with the connection may have been applied: sent again it answers -32002
/// (already settled) with the record, which tells.
///
/// Like ``BlockingPromiseClient``, it belongs to one thread at a time.
///
/// ```swift
/// let client = try ReconnectingPromiseClient(socketPath: path, policy: .default)
/// let record = try client.wait(for: "build/lib", timeout: .seconds(600))
/// print(record.state, record.value ?? .null)
/// ```
public final class ReconnectingPromiseClient {
    /// The path it connects to.
    public let socketPath: String
    public let policy: ReconnectPolicy
    /// The default wait for answers of each connection it makes; nil waits forever.
    public let timeout: Duration?
    /// The connection in use; replaced by each reconnection.
    public private(set) var client: BlockingPromiseClient
    /// How many times it has connected again.
    public private(set) var reconnections = 0
    /// Called after each reconnection, on the calling thread, before anything
    /// is sent on the new connection: take leases or subscribe again here.
    public var onReconnect: ((BlockingPromiseClient) throws -> Void)?
    /// Called when the connection is lost, with the error that showed it.
    public var onDisconnect: ((any Error) -> Void)?
    /// Since when it has had no connection; nil while connected.
    public private(set) var disconnectedSince: ContinuousClock.Instant?
    /// Attempts made since the connection was lost, and when the next one is due
    /// (for ``attemptReconnect()``).
    private var attempts = 0
    private var nextAttempt: ContinuousClock.Instant?
    private var lastError: (any Error)?

    /// Connects to the daemon at `socketPath`, once: a daemon that is not
    /// there now is an error at once (``PromiseClientError/Code/daemonUnreachable``).
    public convenience init(socketPath: String, policy: ReconnectPolicy = .default,
                            timeout: Duration? = .seconds(30)) throws {
        self.init(adopting: try BlockingPromiseClient(socketPath: socketPath, timeout: timeout), policy: policy)
    }

    /// Takes over `client`, an open connection, and reconnects to its socket.
    public init(adopting client: BlockingPromiseClient, policy: ReconnectPolicy = .default) {
        self.socketPath = client.socketPath
        self.policy = policy
        self.timeout = client.timeout
        self.client = client
    }

    /// Closes the connection in use.
    public func close() { client.close() }

    /// Whether `error` means the connection is gone (and another may work),
    /// rather than an answer or a fault of the request.
    public static func isConnectionLoss(_ error: any Error) -> Bool {
        guard let error = error as? PromiseClientError else { return false }
        return error.code == .connectionClosed || error.code == .daemonUnreachable || error.code == .ioFailure
    }

    /// Runs `body` with the connection in use; when the connection is lost,
    /// connects again (see ``reconnect(until:)``) and runs `body` again on the
    /// new one, until it returns, throws something else, or reconnecting
    /// gives up.
    ///
    /// - Parameters:
    ///   - deadline: Reconnecting stops here too, whatever the policy says.
    /// - Throws: What `body` throws, or ``PromiseClientError`` with
    ///   ``PromiseClientError/Code/daemonUnreachable`` when reconnecting gave up.
    @discardableResult
    public func withReconnects<T>(until deadline: ContinuousClock.Instant? = nil,
                                  _ body: (BlockingPromiseClient) throws -> T) throws -> T {
        while true {
            do {
                return try body(client)
            } catch where Self.isConnectionLoss(error) && policy.reconnects {
                markDisconnected(error)
                try reconnect(until: deadline)
            }
        }
    }

    /// Notes that the connection in use is lost (`error` showed it): closes
    /// it, calls ``onDisconnect`` once, and starts the time
    /// ``ReconnectPolicy/giveUpAfter`` counts from. Called by the methods that
    /// reconnect; call it yourself when you saw the loss on ``client``.
    public func markDisconnected(_ error: any Error) {
        client.close()
        lastError = error
        guard disconnectedSince == nil else { return }
        disconnectedSince = .now
        attempts = 0
        nextAttempt = .now + policy.delay(beforeAttempt: 0)
        onDisconnect?(error)
    }

    /// Connects again, waiting between attempts as ``policy`` says, then runs
    /// ``onReconnect``. A failure of ``onReconnect`` that is itself a lost
    /// connection starts over.
    ///
    /// - Throws: ``PromiseClientError`` with ``PromiseClientError/Code/daemonUnreachable``
    ///   once ``ReconnectPolicy/giveUpAfter`` has passed since the connection
    ///   was lost, or `deadline` has passed.
    public func reconnect(until deadline: ContinuousClock.Instant? = nil) throws {
        if disconnectedSince == nil { markDisconnected(PromiseClientError(.connectionClosed, "closed to reconnect")) }
        while true {
            let due = nextAttempt ?? .now
            if let giveUp = giveUpInstant(deadline), due > giveUp { throw givingUp(giveUp) }
            Self.sleep(due - .now)
            if try attemptReconnect() { return }
        }
    }

    /// One attempt to connect again, if one is due: for a caller that has
    /// other work and polls (`promisectl run` pumps its command's output
    /// meanwhile). Returns true once connected (``onReconnect`` has run), false
    /// when no attempt was due or it failed; the next is due as ``policy`` says.
    ///
    /// - Throws: ``PromiseClientError`` with ``PromiseClientError/Code/daemonUnreachable``
    ///   once ``ReconnectPolicy/giveUpAfter`` has passed since the connection was lost.
    public func attemptReconnect() throws -> Bool {
        guard disconnectedSince != nil else { return true }
        let now = ContinuousClock.now
        if let nextAttempt, now < nextAttempt { return false }
        if let giveUp = giveUpInstant(nil), now > giveUp { throw givingUp(giveUp) }
        attempts += 1
        nextAttempt = now + policy.delay(beforeAttempt: attempts)
        do {
            let fresh = try BlockingPromiseClient(socketPath: socketPath, timeout: timeout)
            client = fresh
            try onReconnect?(fresh)
        } catch where Self.isConnectionLoss(error) {
            // Nothing listens yet (the daemon is loading its store), or it went away again.
            lastError = error
            client.close()
            return false
        }
        reconnections += 1
        disconnectedSince = nil
        nextAttempt = nil
        return true
    }

    private func giveUpInstant(_ deadline: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        let policyLimit = policy.giveUpAfter.flatMap { limit in disconnectedSince.map { $0 + limit } }
        guard let deadline else { return policyLimit }
        return min(policyLimit ?? deadline, deadline)
    }

    private func givingUp(_ giveUp: ContinuousClock.Instant) -> PromiseClientError {
        let waited = giveUp - (disconnectedSince ?? giveUp)
        let why = lastError.map { error in (error as? PromiseClientError)?.message ?? "\(error)" } ?? "no connection"
        return PromiseClientError(
            .daemonUnreachable,
            "the daemon at \(socketPath) went away and did not come back within \(Self.seconds(waited)) s (\(why))")
    }

    // MARK: Reconnecting requests

    /// `wait` for `id` that survives restarts of the daemon: the promise's
    /// record once it has settled.
    ///
    /// - Parameter timeout: How long to wait in all (nil: forever); what is
    ///   left of it is sent with each `wait` again, and reconnecting stops there too.
    /// - Throws: ``RPCError`` -32005 (``RPCError/Code/waitTimedOut``) when
    ///   `timeout` passes first; ``PromiseClientError`` when reconnecting gave up.
    public func wait(for id: String, timeout: Duration?) throws -> BlockingPromiseClient.Record {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        return try withReconnects(until: deadline) { client in
            var params: [String: JSONValue] = ["id": .string(id)]
            if let deadline {
                let left = max(.zero, deadline - .now)
                params["timeoutMs"] = .int(Int((left / .milliseconds(1)).rounded(.up)))
            }
            return try BlockingPromiseClient.Record(client.call("wait", params, timeout: nil))
        }
    }

    /// Subscribes to `ids` and returns their notifications in a stream that
    /// subscribes again after each reconnection (see ``ReconnectingSubscription``).
    public func subscribe(_ ids: [String]) throws -> ReconnectingSubscription {
        let subscription = ReconnectingSubscription(client: self, ids: ids)
        try subscription.start()
        return subscription
    }

    // MARK: Helpers

    static func sleep(_ duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value.rounded() == value ? "\(Int(value))" : String(describing: (value * 10).rounded() / 10)
    }
}

@available(*, unavailable, message: "a ReconnectingPromiseClient belongs to one thread at a time")
extension ReconnectingPromiseClient: Sendable {}
