import Glibc
import Logging
import PromiseJSON
import PromiseModel
import PromiseRPC

/// The loop side of ``Server``: the listening socket, the table of
/// connections, the limits on them, and the shutdown sequence.
/// Loop-thread only (built on the creating thread before the loop starts).
final class ServerCore {
    /// How long a stopping daemon waits for clients to read their last answers.
    static let shutdownFlushMilliseconds: UInt64 = 2_000
    /// How often a stopping daemon checks whether every client and process is gone.
    static let shutdownPollMilliseconds: UInt64 = 20
    /// How long a stopping daemon waits for its handler to finish (to write its store).
    static let handlerStopMilliseconds: UInt64 = 5_000
    /// Connections accepted in one loop turn at most. libuv accepts for as
    /// long as the backlog holds a connection; clients that connect as fast
    /// as they are accepted would keep the loop there, and every connected
    /// client would wait. Past this many, the rest wait for the next turn,
    /// after the connections already there are served.
    static let maxAcceptsPerTurn = 32

    let socketPath: String
    let limits: DaemonLimits
    let services: UVLoopServices
    private let loop: UVLoop
    private let listener: UVPipe
    private let flushQueue: FlushQueue
    private let memory: ConnectionMemory
    private let logger: Logger
    private let allowedPeerUID: UInt32
    private let socketIdentity: (device: UInt64, inode: UInt64)?
    private var handler: (any RPCHandler)?
    private var connections: [UInt64: Connection] = [:]
    private var nextConnectionID: UInt64 = 1
    private var signalWatchers: [UVSignal] = []
    private var shutdownTimer: UVTimer?
    private var handlerStopTimer: UVTimer?
    private var shutdownDeadline: UInt64 = 0
    private(set) var isStopping = false
    private var isFinished = false
    /// Connections accepted in this loop turn (see ``maxAcceptsPerTurn``).
    private var acceptsThisTurn = 0
    /// A connection is waiting in libuv, not accepted yet: the turn's
    /// accepts were used up, and libuv stopped watching the listener.
    private var isAcceptDeferred = false
    /// Runs at the start of the next turn after one that accepted: the
    /// count starts again, and a deferred connection is accepted (which
    /// makes libuv watch the listener again).
    private var acceptTurnWatcher: UVLoopWatcher?

    /// Connections that passed the checks and were handed to the handler, still open.
    private(set) var openedCount = 0
    /// Of those, the ones let in past `maxConnections` (see ``accepted(_:)``).
    private(set) var reservedCount = 0

    /// Prepares the socket file, binds and listens. Connections wait in the
    /// backlog until the loop runs.
    init(socketPath: String, limits: DaemonLimits, logger: Logger, allowedPeerUID: UInt32, loop: UVLoop) throws {
        self.socketPath = socketPath
        self.limits = limits
        self.logger = logger
        self.allowedPeerUID = allowedPeerUID
        self.loop = loop
        services = UVLoopServices(loop: loop, logger: logger)

        flushQueue = try FlushQueue(loop: loop)
        memory = try ConnectionMemory(limits: limits, loop: loop, logger: logger)
        try SocketFile.prepare(socketPath)
        listener = try UVPipe(loop: loop)
        do {
            // No moment where the socket exists with looser permissions than 0600.
            let previousMask = umask(0o177)
            defer { umask(previousMask) }
            try listener.bind(socketPath)
            chmod(socketPath, 0o600)
            socketIdentity = SocketFile.identity(of: socketPath)
            try listener.listen(backlog: 511) { [unowned self] error in
                accepted(error)
            }
            acceptTurnWatcher = try UVLoopWatcher(.idle, loop: loop) { [unowned self] in
                nextAcceptTurn()
            }
        } catch {
            listener.close()
            SocketFile.remove(socketPath, ifIdentity: SocketFile.identity(of: socketPath))
            if error.name == "EADDRINUSE" {
                throw ServerError(.alreadyRunning, "another daemon is already listening on \(socketPath)")
            }
            throw ServerError(.cannotListen, "cannot listen on \(socketPath): \(error)")
        }
    }

    /// Starts serving with `handler`. Loop thread.
    func begin(handler: any RPCHandler, handlesSignals: Bool) {
        self.handler = handler
        memory.connection = { [unowned self] id in connections[id] }
        memory.everyConnection = { [unowned self] in Array(connections.values) }
        if handlesSignals {
            UVSignal.unblock([SIGTERM, SIGINT])
            for number in [SIGTERM, SIGINT] {
                do {
                    let watcher = try UVSignal(loop: loop)
                    try watcher.start(number) { [unowned self] number in
                        shutDown(reason: number == SIGTERM ? "SIGTERM" : "SIGINT")
                    }
                    signalWatchers.append(watcher)
                } catch {
                    logger.error("Cannot watch a signal", metadata: ["signal": "\(number)", "error": "\(error)"])
                }
            }
        }
        logger.info("Listening", metadata: ["socket": "\(socketPath)",
                                            "maxConnections": "\(limits.maxConnections)",
                                            "reservedConnections": "\(limits.reservedConnections)",
                                            "maxLineBytes": "\(limits.maxLineBytes)",
                                            "maxBufferedBytes": "\(limits.maxBufferedBytes)",
                                            "lineTimeoutSeconds": "\(limits.lineTimeoutSeconds)"])
    }

    // MARK: Accepting

    private func accepted(_ error: UVError?) {
        if let error {
            logger.info("Accept failed", metadata: ["error": "\(error)"])
            return
        }
        guard acceptsThisTurn < Self.maxAcceptsPerTurn else {
            // Left in libuv: it stops watching the listener until it is taken.
            isAcceptDeferred = true
            return
        }
        acceptOne()
    }

    private func nextAcceptTurn() {
        acceptsThisTurn = 0
        if isAcceptDeferred && !isStopping {
            isAcceptDeferred = false
            acceptOne()
        } else {
            acceptTurnWatcher?.stop()
        }
    }

    private func acceptOne() {
        if acceptsThisTurn == 0 { acceptTurnWatcher?.start() }
        acceptsThisTurn += 1
        let pipe: UVPipe
        do {
            pipe = try listener.accept()
        } catch {
            logger.info("Accept failed", metadata: ["error": "\(error)"])
            return
        }
        let id = nextConnectionID
        nextConnectionID += 1
        let connection = Connection(id: id, pipe: pipe, limits: limits, logger: logger,
                                    flushQueue: flushQueue, memory: memory) { [unowned self] connection in
            connectionDidClose(connection)
        }
        connections[id] = connection

        guard let uid = connection.peerUID, uid == allowedPeerUID else {
            logger.info("Refused a client of another user",
                           metadata: ["connection.id": "\(id)", "peer.uid": "\(connection.peerUID.map(String.init) ?? "unknown")"])
            connection.reject(RPCError(.permissionDenied, "permission denied: this daemon serves uid \(allowedPeerUID) only"))
            return
        }
        guard !isStopping, let handler else {
            connection.close()
            return
        }
        // A full table must not lock out the client that would release the
        // others: when 2,000 scripts running `promisectl wait w` fill it, the
        // `promisectl resolve w` that ends them must still get in.
        // Past the limit, a reserve takes clients that settle but do not
        // wait (the registry refuses `wait` and `subscribe` on them).
        let isReserved = openedCount - reservedCount >= limits.maxConnections
        guard !isReserved || reservedCount < limits.reservedConnections else {
            logger.info("Refused a client: too many connections",
                           metadata: ["connection.id": "\(id)", "limit": "\(limits.maxConnections)",
                                      "reserved": "\(limits.reservedConnections)"])
            connection.reject(RPCError(.limitExceeded, "too many connections (limit \(limits.maxConnections))",
                                       data: ["limit": "maxConnections", "value": .int(limits.maxConnections)]))
            return
        }
        openedCount += 1
        if isReserved {
            reservedCount += 1
            connection.isReserved = true
            logger.info("Accepted a client into the reserve: it may settle but not wait",
                        metadata: ["connection.id": "\(id)", "reserved.open": "\(reservedCount)"])
        } else {
            logger.debug("Accepted connection", metadata: ["connection.id": "\(id)"])
        }
        connection.open(handler: handler)
    }

    private func connectionDidClose(_ connection: Connection) {
        connections[connection.connectionID] = nil
        if connection.wasOpened {
            openedCount -= 1
            if connection.isReserved { reservedCount -= 1 }
            logger.debug("Connection closed", metadata: ["connection.id": "\(connection.connectionID)"])
        }
    }

    // MARK: Stopping

    /// Stops accepting, lets clients read what is queued for them (bounded),
    /// signals running processes, then closes everything and stops the loop.
    /// A second call (a second Ctrl-C) skips the waiting.
    func shutDown(reason: String) {
        guard !isStopping else {
            logger.info("Stopping now", metadata: ["reason": "\(reason)"])
            finish()
            return
        }
        isStopping = true
        logger.info("Stopping", metadata: ["reason": "\(reason)", "connections": "\(connections.count)",
                                           "processes": "\(services.runningCount)"])
        listener.close()
        SocketFile.remove(socketPath, ifIdentity: socketIdentity)
        guard let handler else { return closeConnections() }
        // The handler finishes first (the daemon stores what is left), within a bounded time.
        var stopped = false
        let proceed = { [unowned self] in
            guard !stopped, !isFinished else { return }
            stopped = true
            handlerStopTimer?.close()
            handlerStopTimer = nil
            closeConnections()
        }
        if let timer = try? UVTimer(loop: loop) {
            handlerStopTimer = timer
            timer.start(afterMilliseconds: Self.handlerStopMilliseconds) {
                self.logger.warning("The request handler did not finish stopping in time")
                proceed()
            }
        }
        handler.stop(proceed)
    }

    /// Signals processes, lets clients read what is queued for them, then finishes.
    private func closeConnections() {
        services.terminateAll(graceMilliseconds: limits.killGraceMilliseconds)
        for connection in Array(connections.values) {
            connection.closeAfterFlush(timeoutMilliseconds: Self.shutdownFlushMilliseconds)
        }
        shutdownDeadline = loop.now + max(Self.shutdownFlushMilliseconds, limits.killGraceMilliseconds) + 100
        do {
            let timer = try UVTimer(loop: loop)
            shutdownTimer = timer
            timer.start(afterMilliseconds: 0, repeatMilliseconds: Self.shutdownPollMilliseconds) { [unowned self] in
                if (connections.isEmpty && services.runningCount == 0) || loop.now >= shutdownDeadline {
                    finish()
                }
            }
        } catch {
            finish()
        }
    }

    /// Closes what is left and stops the loop; the loop thread then closes
    /// every remaining handle (and `connectionClosed` reaches the handler).
    private func finish() {
        guard !isFinished else { return }
        isFinished = true
        isStopping = true
        if !listener.isClosing {
            listener.close()
            SocketFile.remove(socketPath, ifIdentity: socketIdentity)
        }
        for connection in Array(connections.values) {
            connection.close()
        }
        services.killAll()
        flushQueue.close()
        memory.close()
        acceptTurnWatcher?.close()
        acceptTurnWatcher = nil
        shutdownTimer?.close()
        shutdownTimer = nil
        handlerStopTimer?.close()
        handlerStopTimer = nil
        signalWatchers.forEach { $0.close() }
        signalWatchers = []
        handler = nil
        loop.stop()
        logger.info("Stopped")
    }
}

@available(*, unavailable)
extension ServerCore: Sendable {}
