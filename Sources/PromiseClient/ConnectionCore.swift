import Foundation
import Logging
import PromiseJSON
import PromiseModel
import PromiseRPC
import Synchronization

/// The moving parts of one ``PromiseConnection``: its socket, its
/// ``ConnectionStateMachine`` under a lock, the bytes waiting to be written,
/// and its reader thread.
///
/// Writes are coalesced: a caller appends its line under the lock, and the
/// first caller to find no one writing writes everything queued, including
/// what others append meanwhile, so concurrent callers share `send` calls.
/// One thread reads: it blocks in `read` on a large buffer, splits lines,
/// hands every message of a read to the state machine under one lock, and
/// answers callers and tells watchers outside it. When the daemon goes
/// away, that thread also waits out the policy's delays and connects again.
final class ConnectionCore: Sendable {
    typealias Responder = @Sendable (Result<JSONValue, PromiseConnectionError>) -> Void
    typealias Machine = ConnectionStateMachine<Responder, RemoteWatcherReference>

    /// The longest line accepted from the daemon: a longer one ends the connection.
    static let maxLineBytes = 256 << 20
    /// How much one `read` takes at most.
    static let readBufferBytes = 256 << 10

    /// Methods safe to send twice: sent again on a new connection when
    /// the answer was lost with the old one. `progress` ignores values below
    /// the current one; `lease` taken twice changes nothing.
    static let retryableMethods: Set<String> = ["get", "wait", "list", "info", "logs", "progress", "lease"]

    let socketPath: String
    /// Tells of reconnections, protocol violations and dropped notifications.
    let logger: Logger
    private let state: Mutex<Locked>
    private let watcherIDs = Atomic<Int>(1)
    /// Signalled by ``close()`` to cut a wait between reconnection attempts short.
    private let wakeUp = DispatchSemaphore(value: 0)

    private struct Locked {
        var machine: Machine
        /// The socket in use, replaced by each reconnection.
        var socket: DuplexUnixSocket
        /// Counts sockets: a writer of an older one leaves the newer one's queue alone.
        var generation = 0
        /// Lines queued for `socket`.
        var outbox: [UInt8] = []
        /// True while a caller writes `outbox` out.
        var flushing = false
    }

    /// What the reader does with one message, outside the lock.
    private enum Delivery: Sendable {
        case answer(Machine.AnswerAction)
        case notification(Machine.NotificationAction)
        /// A notification nothing here watches (a watcher that left, a method this client does not know).
        case dropped(method: String, id: String?)
    }

    /// Connects and starts the reader thread.
    init(socketPath: String, policy: ReconnectPolicy, logger: Logger) throws(PromiseConnectionError) {
        self.socketPath = socketPath
        var logger = logger
        logger[metadataKey: "socket"] = "\(socketPath)"
        self.logger = logger
        let socket: DuplexUnixSocket
        do {
            socket = try DuplexUnixSocket(connectingTo: socketPath)
        } catch {
            throw PromiseConnectionError(error)
        }
        state = Mutex(Locked(machine: Machine(policy: policy), socket: socket))
        let thread = Thread { [self] in run(socket) }
        thread.name = "PromiseConnection reader"
        thread.start()
    }

    // MARK: Requests

    /// Sends `method`; `responder` gets the answer, or the error that ended the connection.
    /// - Parameter takesLease: The request takes the lease of the promise it answers
    ///   the record of, to take back after a reconnection.
    func call(_ method: String, _ params: [String: JSONValue], takesLease: Bool = false, responder: @escaping Responder) {
        let retryable = Self.retryableMethods.contains(method)
        let action = state.withLock { state -> Machine.SendAction in
            let action = state.machine.requestSent(method, params, responder: responder, retryable: retryable, takesLease: takesLease)
            if case .write(let line) = action { state.outbox.append(contentsOf: line) }
            return action
        }
        switch action {
        case .write: flush()
        case .queued: break
        case .fail(let error): responder(.failure(error))
        }
    }

    /// Sends `method` and drops the answer: for what nobody waits on (a
    /// publish settling its id, an unsubscribe).
    func send(_ method: String, _ params: [String: JSONValue]) {
        call(method, params) { _ in }
    }

    // MARK: Watchers

    /// A new identity for a watcher.
    func makeWatcherID() -> Int {
        watcherIDs.add(1, ordering: .relaxed).oldValue
    }

    /// Tells `watcher` (known by `watcherID`) of the settlement and progress of `ids`.
    func watch(_ ids: [String], watcher: any RemoteWatcher, id watcherID: Int) {
        let action = state.withLock { state -> Machine.WatchAction in
            let action = state.machine.watchStarted(RemoteWatcherReference(watcher), id: watcherID, ids: ids)
            if case .write(let line) = action { state.outbox.append(contentsOf: line) }
            return action
        }
        switch action {
        case .write: flush()
        case .none: break
        case .finished: watcher.finished()
        case .fail(let error): watcher.failed(error)
        }
    }

    /// Stops telling watcher `watcherID`, started on `ids`; unsubscribes what no one else watches.
    func endWatch(_ watcherID: Int, ids: [String]) {
        let queued = state.withLock { state -> Bool in
            guard let line = state.machine.watchEnded(watcherID, ids: ids) else { return false }
            state.outbox.append(contentsOf: line)
            return true
        }
        if queued { flush() }
    }

    // MARK: Closing

    /// Fails what waits with ``PromiseConnectionError/Code/closed`` and
    /// closes the socket; the daemon rejects the leases this connection holds.
    func close() {
        let (end, socket) = state.withLock { ($0.machine.closeRequested(), $0.socket) }
        socket.shutdown()
        wakeUp.signal()
        perform(end)
    }

    /// False once closed, or lost for good (a connection that is
    /// reconnecting is open: its calls wait for the next connection).
    var isOpen: Bool {
        state.withLock { state in
            if case .closed = state.machine.phase { return false }
            return true
        }
    }

    /// What the connection holds now: requests awaiting an answer, ids
    /// subscribed to, watchers. Tests check that what was given up is gone.
    var tableCounts: (requests: Int, subscribedIDs: Int, watchers: Int) {
        state.withLock { ($0.machine.requestsInFlight, $0.machine.subscribedIDs, $0.machine.watcherCount) }
    }

    // MARK: Writing

    /// Writes what is queued, unless another caller is at it already.
    private func flush() {
        var (chunk, socket, generation) = state.withLock { state -> ([UInt8], DuplexUnixSocket?, Int) in
            guard !state.flushing, !state.outbox.isEmpty else { return ([], nil, 0) }
            state.flushing = true
            var taken: [UInt8] = []
            swap(&taken, &state.outbox)
            return (taken, state.socket, state.generation)
        }
        guard let socket else { return }
        while !chunk.isEmpty {
            do {
                try socket.writeAll(chunk)
            } catch {
                // The reader sees the end of input and tells the state machine.
                socket.shutdown()
                state.withLock { state in
                    guard state.generation == generation else { return }
                    state.outbox = []
                    state.flushing = false
                }
                return
            }
            chunk.removeAll(keepingCapacity: true)
            state.withLock { state in
                guard state.generation == generation else { return }
                if state.outbox.isEmpty {
                    state.flushing = false
                } else {
                    swap(&chunk, &state.outbox)
                }
            }
        }
    }

    // MARK: Reading and reconnecting

    /// The reader thread: reads `socket` until it is lost, then reconnects
    /// as the policy says and reads the new one, until closed or given up.
    private func run(_ first: DuplexUnixSocket) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readBufferBytes, alignment: 1)
        defer { buffer.deallocate() }
        var socket = first
        while true {
            let failure = read(socket, into: buffer)
            socket.shutdown()
            var wasOpen = false
            var end = state.withLock { state -> Machine.EndAction in
                state.outbox = []
                state.flushing = false
                if case .open = state.machine.phase { wasOpen = true }
                return state.machine.connectionLost(failure, at: .now)
            }
            if end.reconnectAfter != nil {
                logger.warning("lost the daemon; reconnecting", metadata: ["reason": "\(failure.message)"])
            } else if wasOpen {
                logger.notice("the connection to the daemon ended", metadata: ["reason": "\(end.error.message)"])
            }
            perform(end)
            guard let next = reconnect(after: &end) else { return }
            socket = next
        }
    }

    /// Waits and tries again as `end` says, until connected (the new socket)
    /// or given up or closed (nil).
    private func reconnect(after end: inout Machine.EndAction) -> DuplexUnixSocket? {
        while let delay = end.reconnectAfter {
            let (seconds, attoseconds) = min(delay, .seconds(3600)).components
            let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
            if wakeUp.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success {
                return nil
            }
            do {
                let socket = try DuplexUnixSocket(connectingTo: socketPath)
                let connected = state.withLock { state -> Bool in
                    guard case .reconnecting = state.machine.phase else { return false }
                    state.socket = socket
                    state.generation += 1
                    state.flushing = false
                    state.outbox = state.machine.reconnected()
                    return true
                }
                guard connected else { return nil }
                logger.notice("connected to the daemon again")
                flush()
                return socket
            } catch {
                end = state.withLock { $0.machine.reconnectFailed(at: .now, PromiseConnectionError(error)) }
                if end.reconnectAfter == nil {
                    logger.error("gave up reconnecting to the daemon", metadata: ["reason": "\(end.error.message)"])
                } else {
                    logger.debug("could not reconnect yet", metadata: ["reason": "\(error)"])
                }
                perform(end)
            }
        }
        return nil
    }

    /// Reads `socket` until its end, filing every message.
    /// - Returns: why it ended.
    private func read(_ socket: DuplexUnixSocket, into buffer: UnsafeMutableRawBufferPointer) -> PromiseConnectionError {
        var input: [UInt8] = []
        var scanFrom = 0
        while true {
            let count: Int
            do {
                count = try socket.read(into: buffer)
            } catch {
                return PromiseConnectionError(.connectionLost, "reading from the daemon failed: \(error.message)")
            }
            if count == 0 { return PromiseConnectionError(.connectionLost, "the daemon closed the connection") }
            input.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            var messages: [JSONValue] = []
            var lineStart = 0
            while let newline = Self.firstNewline(in: input, from: scanFrom) {
                var lineEnd = newline
                if lineEnd > lineStart && input[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
                if lineEnd > lineStart {
                    do {
                        messages.append(try JSONValue(parsing: input[lineStart..<lineEnd]))
                    } catch {
                        let text = String(decoding: input[lineStart..<min(lineEnd, lineStart + 200)], as: UTF8.self)
                        let error = PromiseConnectionError(.invalidResponse, "the daemon sent a line that is not JSON: \(text)")
                        logger.error("the daemon broke the protocol", metadata: ["reason": "\(error.message)"])
                        return error
                    }
                }
                lineStart = newline + 1
                scanFrom = lineStart
            }
            input.removeFirst(lineStart)
            scanFrom = input.count
            if input.count > Self.maxLineBytes {
                return PromiseConnectionError(.invalidResponse, "the daemon sent a line longer than \(Self.maxLineBytes) bytes")
            }
            if let error = deliver(messages) {
                logger.error("the daemon broke the protocol", metadata: ["reason": "\(error.message)"])
                return error
            }
        }
    }

    /// Feeds `messages` to the state machine under one lock, then does what it says.
    /// - Returns: an error when a message breaks the protocol.
    private func deliver(_ messages: [JSONValue]) -> PromiseConnectionError? {
        var deliveries: [Delivery] = []
        deliveries.reserveCapacity(messages.count)
        let violation = state.withLock { state -> PromiseConnectionError? in
            for message in messages {
                if case .array(let elements) = message {
                    for element in elements {
                        if let error = Self.file(element, into: &deliveries, &state.machine) { return error }
                    }
                } else if let error = Self.file(message, into: &deliveries, &state.machine) {
                    return error
                }
            }
            return nil
        }
        for delivery in deliveries { perform(delivery) }
        return violation
    }

    private static func file(_ message: JSONValue, into deliveries: inout [Delivery], _ machine: inout Machine) -> PromiseConnectionError? {
        guard case .object(let members) = message else {
            return PromiseConnectionError(.invalidResponse, "the daemon sent a message that is not an object: \(message)")
        }
        if let id = members["id"] {
            if let result = members["result"] {
                deliveries.append(.answer(machine.answerReceived(id: id, result: .success(result))))
            } else if let error = members["error"], let code = error["code"]?.intValue {
                let rpcError = RPCError(RPCError.Code(rawValue: code), error["message"]?.stringValue ?? "", data: error["data"])
                deliveries.append(.answer(machine.answerReceived(id: id, result: .failure(rpcError))))
            } else {
                return PromiseConnectionError(.invalidResponse, "the daemon sent an answer with neither result nor error: \(message)")
            }
        } else if case .string(let method)? = members["method"] {
            let action = machine.notificationReceived(method: method, params: members["params"] ?? .null)
            if case .none = action {
                deliveries.append(.dropped(method: method, id: members["params"]?["id"]?.stringValue))
            } else {
                deliveries.append(.notification(action))
            }
        } else {
            return PromiseConnectionError(.invalidResponse, "the daemon sent an unexpected message: \(message)")
        }
        return nil
    }

    private func perform(_ delivery: Delivery) {
        switch delivery {
        case .answer(.respond(let responder, let result)):
            responder(result)
        case .answer(.failWatchers(let watchers, let error)), .notification(.failWatchers(let watchers, let error)):
            for reference in watchers { reference.watcher.failed(error) }
        case .notification(.settled(let record, let watchers, let finished)):
            for reference in watchers { reference.watcher.settled(record) }
            for reference in finished { reference.watcher.finished() }
        case .notification(.progress(let id, let fraction, let message, let watchers)),
             .answer(.progress(let id, let fraction, let message, let watchers)):
            for reference in watchers { reference.watcher.progressed(id: id, fraction: fraction, message: message) }
        case .dropped(let method, let id):
            logger.trace("dropped a notification nothing watches", metadata: ["method": "\(method)", "id": "\(id ?? "")"])
        case .answer(.none), .notification(.none):
            break
        }
    }

    private func perform(_ end: Machine.EndAction) {
        for responder in end.responders { responder(.failure(end.error)) }
        for reference in end.watchers { reference.watcher.failed(end.error) }
    }

    /// The index of the first "\n" in `bytes` at or after `start`.
    private static func firstNewline(in bytes: [UInt8], from start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        return bytes.withUnsafeBytes { raw -> Int? in
            guard let found = memchr(raw.baseAddress! + start, 0x0A, raw.count - start) else { return nil }
            return raw.baseAddress!.distance(to: UnsafeRawPointer(found))
        }
    }
}
