import Logging
import Promise
import PromiseJSON
import PromiseModel
import PromiseRPC

/// An async, typed connection to the `promised` daemon: remote promises as
/// core ``Promise``s, requests as `async` methods with typed records and errors.
///
/// One Unix socket per connection, any number of requests in flight on it
/// (pipelined, answered in any order), usable from any task or thread at
/// once. One reader thread per connection reads every answer and
/// notification; no thread is made per request or per waiter. Each `async`
/// method has a form on ``calls`` that returns a core `Promise` instead, for
/// code on plain threads (`.wait(timeout:)`).
///
/// ```swift
/// let remote = try await PromiseConnection.connect()            // the socket promisectl finds
/// let lib: Promise<Artifact> = remote.promise("build/lib", as: Artifact.self)
/// let test = lib.then { artifact in try runTests(artifact) }    // the core's operators
/// try await remote.resolve("build/lib", with: artifact)          // any Encodable & Sendable
/// for try await event in remote.watch(["build/lib", "build/test"]) { print(event) }
/// remote.close()
/// ```
///
/// Cancelling the task that awaits a call ends the await at once with
/// `CancellationError` but does not withdraw the request: the daemon still
/// carries it out and answers, and the answer is dropped. A
/// ``wait(_:timeout:)`` is the exception: it is withdrawn, so that waits
/// given up leave nothing on the daemon. Dropping the last reference to a
/// connection closes it, as ``close()`` does.
public final class PromiseConnection: Sendable {
    let core: ConnectionCore

    /// The socket this connection is made to.
    public var socketPath: String { core.socketPath }

    private init(core: ConnectionCore) {
        self.core = core
    }

    deinit { core.close() }

    /// Connects to the daemon.
    ///
    /// ```swift
    /// let remote = try await PromiseConnection.connect(socketPath: "/run/user/1000/promised.sock")
    /// ```
    /// When the daemon goes away (a restart, `kill -9`), the connection
    /// connects again as `reconnect` says (by default as `promisectl wait`
    /// does: 50 ms doubling up to 1 s, for 30 s). On the new connection it
    /// takes back the leases it holds, subscribes again for every mirror and
    /// watch (a settlement made meanwhile is told then, once; progress made
    /// meanwhile is read back with `get` and told once), and sends again
    /// the requests in flight that are safe to send twice (`get`, `wait`,
    /// `list`, `info`, `logs`, `progress`, `lease`); the others fail with
    /// ``PromiseConnectionError/Code/connectionLost``, since they may have been
    /// applied. Requests made while it reconnects wait for the new connection.
    ///
    /// - Parameters:
    ///   - socketPath: The daemon's socket; nil looks where `promisectl`
    ///     does (`$PROMISED_SOCKET`, `$XDG_RUNTIME_DIR/promised.sock`, …; see `SocketPath`).
    ///   - reconnect: How to get the daemon back; ``ReconnectPolicy/never`` fails everything at once.
    ///   - logger: Where the connection tells of losing the daemon and
    ///     reconnecting (warning, notice), of a daemon that breaks the
    ///     protocol (error) and of notifications it drops (trace). By default
    ///     nothing is logged, as swift-log asks of libraries: pass your own.
    /// - Throws: ``PromiseConnectionError`` with ``PromiseConnectionError/Code/unreachable``
    ///   when nothing listens there (the first connection is not retried),
    ///   ``PromiseConnectionError/Code/refused`` when the daemon there runs as
    ///   another user (nothing is sent to it).
    public static func connect(
        socketPath: String? = nil, reconnect: ReconnectPolicy = .default, logger: Logger = PromiseConnection.silentLogger
    ) async throws -> PromiseConnection {
        try connectNow(socketPath: socketPath, reconnect: reconnect, logger: logger)
    }

    /// A logger that logs nothing: what a connection logs to unless given one.
    public static let silentLogger = Logger(label: "PromiseConnection", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Connects from a plain thread, blocking for as long as `connect(2)` takes
    /// (a Unix socket answers at once).
    ///
    /// ```swift
    /// let remote = try PromiseConnection.connectNow()
    /// let record = try remote.calls.get("build/lib").wait(timeout: .seconds(5))
    /// ```
    public static func connectNow(
        socketPath: String? = nil, reconnect: ReconnectPolicy = .default, logger: Logger = PromiseConnection.silentLogger
    ) throws(PromiseConnectionError) -> PromiseConnection {
        PromiseConnection(core: try ConnectionCore(
            socketPath: SocketPath.resolve(explicit: socketPath), policy: reconnect, logger: logger))
    }

    /// Closes the connection. Calls still waiting fail with
    /// ``PromiseConnectionError/Code/closed``, mirrors and watches that have
    /// not settled end with it, and the daemon rejects the promises this
    /// connection holds the lease of (``create(_:timeout:lease:name:)`` with
    /// `lease: true`, ``publish(_:as:name:)``). Closing twice does nothing more.
    ///
    /// ```swift
    /// remote.close()
    /// ```
    public func close() { core.close() }

    /// False once closed, or once the daemon went away.
    public var isOpen: Bool { core.isOpen }

    // MARK: Calls

    /// Sends `method` with `params` and awaits the raw `result`: for the
    /// methods this type has no typed form of (docs/PROTOCOL.md).
    ///
    /// ```swift
    /// let info = try await remote.call("info")
    /// ```
    /// - Throws: ``PromiseConnectionError``: the daemon's error answer, typed, or a lost connection.
    public func call(_ method: String, _ params: [String: JSONValue] = [:]) async throws -> JSONValue {
        try await request(method, params) { $0 }
    }

    /// Sends a request and awaits its answer, turned into `T` by `decode`.
    /// A cancelled task stops waiting at once (`CancellationError`); the
    /// request stays sent, and its answer is dropped when it comes.
    func request<T: Sendable>(
        _ method: String, _ params: [String: JSONValue], takesLease: Bool = false,
        decode: @escaping @Sendable (JSONValue) throws(PromiseConnectionError) -> T
    ) async throws -> T {
        let once = _OnceResumer<T>()
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                guard once.install(continuation) else { return }
                core.call(method, params, takesLease: takesLease) { result in
                    switch result {
                    case .success(let json):
                        do {
                            once.resume(with: .success(try decode(json)))
                        } catch {
                            once.resume(with: .failure(error))
                        }
                    case .failure(let error):
                        once.resume(with: .failure(error))
                    }
                }
            }
        } onCancel: {
            once.resume(with: .failure(CancellationError()))
        }
    }

    /// Sends a request and returns a promise of its answer, turned into `T` by `decode`.
    func promisedRequest<T: Sendable>(
        _ method: String, _ params: [String: JSONValue], takesLease: Bool = false,
        decode: @escaping @Sendable (JSONValue) throws(PromiseConnectionError) -> T
    ) -> Promise<T> {
        let promise = Promise<T>()
        core.call(method, params, takesLease: takesLease) { result in
            switch result {
            case .success(let json):
                do {
                    promise.fulfill(try decode(json))
                } catch {
                    promise.reject(error)
                }
            case .failure(let error):
                promise.reject(error)
            }
        }
        return promise
    }
}
