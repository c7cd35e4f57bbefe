import Foundation
import Glibc
import Logging
import PromiseModel
import PromiseRPC
import PromiseRegistry

/// The daemon's server: a libuv loop on a thread of its own, listening on a
/// Unix socket, handing each line of each client to an ``RPCHandler``.
///
/// ```swift
/// let server = try Server(socketPath: SocketPath.resolve(explicit: nil),
///                         limits: DaemonLimits(), logger: logger)
/// try server.run { context in
///     EchoHandler()  // built on the loop thread; the daemon builds its Dispatcher here
/// }
/// // returns after SIGTERM/SIGINT or `stop()`
/// ```
///
/// - The socket is created 0600, in a folder created 0700 if missing (an
///   existing one must be no symlink, ours or root's, and writable by no one
///   else unless sticky). A stale socket file (connecting is refused) is
///   replaced; a live one is another daemon's, and `init` throws
///   ``ServerError/Code/alreadyRunning``; one that cannot be tried is left alone.
/// - Clients of another uid (`SO_PEERCRED`) get a -32003 error line and are
///   closed; past `limits.maxConnections`, up to `limits.reservedConnections`
///   more are opened with `RPCPeer.isReserved` set (the registry lets them
///   settle but not wait); past those, clients get a -32004 error line and
///   are closed. The handler sees none of the refused ones.
/// - Every handler call happens on the loop thread.
/// - Stopping (SIGTERM, SIGINT, ``stop()``): stop accepting, remove the socket
///   file, SIGTERM running processes, give clients up to 2 s to read what is
///   queued for them, close everything, end the loop thread.
public final class Server: Sendable {
    /// Where the server listens.
    public let socketPath: String
    public let limits: DaemonLimits
    private let thread: LoopThread
    private let core: LoopBound<ServerCore>
    private let logger: Logger
    private let handlesSignals: Bool
    private let failure = FailureBox()

    /// Binds and listens at once (so the caller learns of a socket problem
    /// here); clients wait in the backlog until ``start(_:)``.
    ///
    /// - Parameters:
    ///   - handlesSignals: stop on SIGTERM and SIGINT. Tests pass false.
    ///   - allowedPeerUID: the only uid served; the daemon's own by default.
    /// - Throws: ``ServerError`` for socket problems, `UVError` if libuv cannot start.
    public init(
        socketPath: String,
        limits: DaemonLimits = DaemonLimits(),
        logger: Logger,
        handlesSignals: Bool = true,
        allowedPeerUID: UInt32 = getuid()
    ) throws {
        // Writing to a client that has gone must be an error, not a fatal signal.
        signal(SIGPIPE, SIG_IGN)
        self.socketPath = socketPath
        self.limits = limits
        self.logger = logger
        self.handlesSignals = handlesSignals
        thread = try LoopThread(name: "promised-loop")
        core = LoopBound(try ServerCore(
            socketPath: socketPath, limits: limits, logger: logger,
            allowedPeerUID: allowedPeerUID, loop: thread.loop))
    }

    /// Runs work on the loop thread, from any thread.
    public var executor: LoopExecutor { thread.executor }

    /// Starts the loop thread. `makeHandler` runs on it first (build the
    /// registry and dispatcher there: they live on the loop thread); then
    /// clients are served. If it throws, the server stops and
    /// ``waitUntilStopped(timeout:)`` / ``run(_:)`` report the error.
    public func start(_ makeHandler: @escaping @Sendable (ServerContext) throws -> any RPCHandler) {
        let core = self.core
        let executor = thread.executor
        let logger = self.logger
        let limits = self.limits
        let handlesSignals = self.handlesSignals
        let failure = self.failure
        thread.start { _ in
            let context = ServerContext(services: core.value.services, executor: executor,
                                        limits: limits, logger: logger)
            do {
                core.value.begin(handler: try makeHandler(context), handlesSignals: handlesSignals)
            } catch {
                logger.error("Cannot start the request handler", metadata: ["error": "\(error)"])
                failure.set(error)
                core.value.shutDown(reason: "handler failed to start")
            }
        }
    }

    /// Starts, then blocks until the server has stopped (a signal or ``stop()``).
    ///
    /// - Throws: what `makeHandler` threw.
    public func run(_ makeHandler: @escaping @Sendable (ServerContext) throws -> any RPCHandler) throws {
        start(makeHandler)
        waitUntilStopped()
        if let error = failure.error { throw error }
    }

    /// Asks the server to stop, as SIGTERM does. Any thread; returns at once.
    public func stop() {
        let core = self.core
        thread.executor.execute {
            core.value.shutDown(reason: "stop requested")
        }
    }

    /// Blocks until the loop thread has ended, at most `timeout`.
    /// Returns false if it is still running.
    @discardableResult
    public func waitUntilStopped(timeout: Duration? = nil) -> Bool {
        thread.waitUntilFinished(timeout: timeout)
    }
}

/// The error `makeHandler` threw, read after the loop thread ended.
private final class FailureBox: @unchecked Sendable {  // `lock` guards `stored`.
    private let lock = NSLock()
    private var stored: (any Error)?

    func set(_ error: any Error) {
        lock.lock()
        stored = error
        lock.unlock()
    }

    var error: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}
