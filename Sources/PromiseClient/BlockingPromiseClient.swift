import PromiseJSON
import PromiseModel
import PromiseRPC

/// A blocking JSON-RPC 2.0 client for the `promised` daemon, over its Unix socket.
///
/// Made for command-line tools, scripts and tests: every call blocks the calling
/// thread until the answer arrives or the timeout passes. Answers are matched by
/// id, so several requests may be sent before any answer is read (pipelining),
/// and the daemon may answer them in any order. Server pushes (`settled`,
/// `progress`) that arrive while waiting for an answer are queued for
/// ``nextNotification(timeout:)``.
///
/// A daemon that refuses a client (too many connections) says why in an
/// error with a null id, then closes: calls then throw that ``RPCError``
/// rather than a closed connection.
///
/// A client belongs to one thread at a time; it is not `Sendable`.
///
/// ```swift
/// let client = try BlockingPromiseClient(socketPath: SocketPath.resolve(explicit: nil, environment: env))
/// defer { client.close() }
/// _ = try client.call("create", ["id": "build/lib"])
/// _ = try client.call("subscribe", ["ids": ["build/lib"]])
/// _ = try client.call("resolve", ["id": "build/lib", "value": ["ok": true]])
/// let pushed = try client.nextNotification(timeout: .seconds(5))  // method "settled"
/// ```
public final class BlockingPromiseClient {
    /// The path this client connected to.
    public let socketPath: String
    /// How long ``call(_:_:)`` and ``result(for:)`` wait for an answer; nil waits forever.
    public var timeout: Duration?
    /// Longest line accepted from the daemon; a longer one is a protocol violation.
    public var maxLineBytes: Int = 256 << 20

    private let socket: BlockingUnixSocket
    private var nextRequestID = 1
    /// Bytes read but not yet split into lines.
    private var inputBuffer: [UInt8] = []
    /// Where the search for "\n" resumes in `inputBuffer`.
    private var scanOffset = 0
    /// Answers that arrived before anyone asked for them.
    private var unclaimedResponses = UnclaimedResponses()
    private var queuedNotifications: [Notification] = []
    private var notificationHead = 0
    private var reachedEndOfInput = false

    /// Connects to the daemon listening at `socketPath`.
    ///
    /// - Parameters:
    ///   - socketPath: The daemon's socket, usually from `SocketPath.resolve(explicit:environment:)`.
    ///   - timeout: The default wait for answers; nil waits forever.
    /// - Throws: ``PromiseClientError`` with code ``PromiseClientError/Code/daemonUnreachable``
    ///   when nothing listens there ("daemon not running at PATH; start it with `promised` …"),
    ///   and ``PromiseClientError/Code/foreignDaemon`` when the process listening there runs
    ///   as another user (root too): the connection is closed before anything is sent.
    public init(socketPath: String, timeout: Duration? = .seconds(30)) throws {
        self.socketPath = socketPath
        self.timeout = timeout
        socket = try BlockingUnixSocket(connectingTo: socketPath)
    }

    /// False once ``close()`` was called.
    public var isOpen: Bool { socket.isOpen }

    /// The socket's file descriptor, to `poll(2)` it alongside others; -1 once closed.
    /// Bytes may already be buffered: check ``hasQueuedNotifications`` first.
    public var fileDescriptor: Int32 { socket.fileDescriptor }

    /// Closes the connection. Leased promises of this connection are rejected by the daemon.
    public func close() { socket.close() }

    // MARK: Requests

    /// Sends a request and waits for its answer, for at most ``timeout``.
    ///
    /// ```swift
    /// let record = try client.call("get", ["id": "build/lib"])
    /// ```
    /// - Returns: The `result` of the answer.
    /// - Throws: ``RPCError`` for an error answer; ``PromiseClientError`` when the
    ///   connection fails or no answer comes in time.
    @discardableResult
    public func call(_ method: String, _ params: [String: JSONValue] = [:]) throws -> JSONValue {
        try call(method, params, timeout: timeout)
    }

    /// Sends a request and waits for its answer for at most `timeout` (nil: forever).
    @discardableResult
    public func call(_ method: String, _ params: [String: JSONValue], timeout: Duration?) throws -> JSONValue {
        let id = try send(method, params)
        return try result(for: id, timeout: timeout)
    }

    /// Sends a request without waiting; collect its answer later with ``result(for:)``.
    ///
    /// ```swift
    /// let ids = try (0..<100).map { try client.send("create", ["id": .string("job/\($0)")]) }
    /// let records = try ids.map { try client.result(for: $0) }
    /// ```
    /// - Returns: The request's id.
    @discardableResult
    public func send(_ method: String, _ params: [String: JSONValue] = [:]) throws -> Int {
        let id = nextRequestID
        nextRequestID += 1
        try sendMessage(Self.request(method, params, id: .int(id)))
        return id
    }

    /// Sends a notification: a request without id, which the daemon executes and never answers.
    public func notify(_ method: String, _ params: [String: JSONValue] = [:]) throws {
        try sendMessage(Self.request(method, params, id: nil))
    }

    /// Waits for the answer to request `id`, for at most ``timeout``.
    /// - Throws: ``RPCError`` for an error answer.
    @discardableResult
    public func result(for id: Int) throws -> JSONValue {
        try result(for: id, timeout: timeout)
    }

    /// Waits for the answer to request `id` for at most `timeout` (nil: forever).
    @discardableResult
    public func result(for id: Int, timeout: Duration?) throws -> JSONValue {
        let response = try response(for: .int(id), timeout: timeout)
        return try Self.unwrap(response)
    }

    /// One entry of a ``batch(_:timeout:)``.
    public struct BatchEntry: Sendable, Hashable {
        public var method: String
        public var params: [String: JSONValue]
        /// A notification has no id and gets no answer.
        public var isNotification: Bool

        public init(_ method: String, _ params: [String: JSONValue] = [:], isNotification: Bool = false) {
            self.method = method
            self.params = params
            self.isNotification = isNotification
        }
    }

    /// Sends the entries as one JSON-RPC batch (a JSON array) and waits for
    /// every answer. Notifications in the batch get none.
    ///
    /// ```swift
    /// let results = try client.batch([.init("create", ["id": "a"]), .init("create", ["id": "a"])])
    /// // [.success(record), .failure(RPCError(.alreadyExists, …))]
    /// ```
    /// - Returns: One result per entry that is not a notification, in entry order.
    public func batch(_ entries: [BatchEntry], timeout: Duration? = .seconds(30)) throws -> [Result<JSONValue, RPCError>] {
        var ids: [Int] = []
        var messages: [JSONValue] = []
        for entry in entries {
            if entry.isNotification {
                messages.append(Self.request(entry.method, entry.params, id: nil))
            } else {
                let id = nextRequestID
                nextRequestID += 1
                ids.append(id)
                messages.append(Self.request(entry.method, entry.params, id: .int(id)))
            }
        }
        try sendMessage(.array(messages))
        let deadline = timeout.map { ContinuousClock.now + $0 }
        return try ids.map { id in
            let response = try response(for: .int(id), deadline: deadline)
            do {
                return .success(try Self.unwrap(response))
            } catch let error as RPCError {
                return .failure(error)
            }
        }
    }

    // MARK: Raw access

    /// Sends `line` as it is, followed by "\n": for talking to the daemon in
    /// terms the typed API cannot express (tests, malformed input).
    public func sendLine(_ line: some Collection<UInt8>) throws {
        var bytes = Array(line)
        bytes.append(UInt8(ascii: "\n"))
        try socket.writeAll(bytes)
    }

    /// Waits for the answer whose `id` member equals `id` (`.null` for answers
    /// to unparseable requests) and returns the whole response object.
    public func response(for id: JSONValue, timeout: Duration?) throws -> JSONValue {
        try response(for: id, deadline: timeout.map { ContinuousClock.now + $0 })
    }

    /// Stops writing: the daemon sees end of input, answers what it has, then closes.
    public func finishSending() { socket.shutdownWrite() }

    // MARK: Notifications

    /// A message the daemon pushed without being asked: `settled` or `progress`.
    public struct Notification: Sendable, Hashable {
        public var method: String
        public var params: JSONValue

        public init(method: String, params: JSONValue) {
            self.method = method
            self.params = params
        }

        /// The message as it came: `{"jsonrpc":"2.0","method":…,"params":…}`.
        public var json: JSONValue {
            .object(["jsonrpc": "2.0", "method": .string(method), "params": params])
        }
    }

    /// True when a notification is queued, so ``nextNotification(timeout:)`` will not block.
    public var hasQueuedNotifications: Bool { notificationHead < queuedNotifications.count }

    /// The next notification, waiting at most `timeout` (nil: forever, `.zero`: only
    /// what already arrived). Answers read meanwhile are kept for their callers.
    /// - Returns: nil when none came in time.
    /// - Throws: ``PromiseClientError`` with ``PromiseClientError/Code/connectionClosed``
    ///   when the daemon closed the connection and nothing is queued.
    public func nextNotification(timeout: Duration?) throws -> Notification? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            if let next = dequeueNotification() { return next }
            try readMessages(deadline: deadline)
            if let next = dequeueNotification() { return next }
            if let deadline, ContinuousClock.now >= deadline { return nil }
        }
    }

    // MARK: Internals

    private func dequeueNotification() -> Notification? {
        guard notificationHead < queuedNotifications.count else { return nil }
        let next = queuedNotifications[notificationHead]
        notificationHead += 1
        if notificationHead > 64 && notificationHead * 2 > queuedNotifications.count {
            queuedNotifications.removeFirst(notificationHead)
            notificationHead = 0
        }
        return next
    }

    private static func request(_ method: String, _ params: [String: JSONValue], id: JSONValue?) -> JSONValue {
        var members: [String: JSONValue] = ["jsonrpc": "2.0", "method": .string(method), "params": .object(params)]
        if let id { members["id"] = id }
        return .object(members)
    }

    private func sendMessage(_ message: JSONValue) throws {
        let failure: PromiseClientError
        do {
            try socket.writeAll(message.serializedLine())
            return
        } catch {
            failure = error
        }
        if failure.code == .connectionClosed {
            // A refused client may not even get its request out: the reason
            // is in what the daemon wrote before it closed.
            let deadline = ContinuousClock.now + Self.refusalReadTimeout
            while !reachedEndOfInput && ContinuousClock.now < deadline {
                try readMessages(deadline: deadline)
            }
            try throwRefusal()
        }
        throw failure
    }

    /// How long a client whose request could not be written reads for the daemon's reason.
    static let refusalReadTimeout: Duration = .milliseconds(500)

    /// Throws the error the daemon sent, with a null id, before it closed
    /// the connection: why it refused this client (-32004 too many
    /// connections, -32003 another user, -32004 a line too long). Called
    /// once the connection is closed, so that the caller sees that reason
    /// rather than "closed before answering".
    private func throwRefusal() throws {
        guard let last = unclaimedResponses.takeLast(for: .null) else { return }
        _ = try Self.unwrap(last)
    }

    /// The `result` of a response, or its `error` thrown as ``RPCError``.
    static func unwrap(_ response: JSONValue) throws -> JSONValue {
        if let error = response["error"] {
            guard let code = error["code"]?.intValue else {
                throw PromiseClientError(.invalidResponse, "the daemon answered with a malformed error: \(error)")
            }
            let message = error["message"]?.stringValue ?? ""
            throw RPCError(RPCError.Code(rawValue: code), message, data: error["data"])
        }
        guard let result = response["result"] else {
            throw PromiseClientError(.invalidResponse, "the daemon's answer has neither result nor error: \(response)")
        }
        return result
    }

    private func response(for id: JSONValue, deadline: ContinuousClock.Instant?) throws -> JSONValue {
        while true {
            if let first = unclaimedResponses.takeFirst(for: id) { return first }
            if reachedEndOfInput {
                try throwRefusal()
                throw PromiseClientError(.connectionClosed, "the daemon closed the connection before answering")
            }
            if let deadline, ContinuousClock.now >= deadline {
                throw PromiseClientError(.timedOut, "no answer from the daemon within the timeout")
            }
            try readMessages(deadline: deadline)
        }
    }

    /// Reads once (until data arrives or `deadline`) and files every complete
    /// line as an answer or a notification.
    private func readMessages(deadline: ContinuousClock.Instant?) throws {
        if reachedEndOfInput {
            try throwRefusal()
            throw PromiseClientError(.connectionClosed, "the daemon closed the connection")
        }
        guard let chunk = try socket.read(deadline: deadline) else { return }
        if chunk.isEmpty {
            reachedEndOfInput = true
            return
        }
        inputBuffer.append(contentsOf: chunk)
        var lineStart = 0
        var index = scanOffset
        while index < inputBuffer.count {
            if inputBuffer[index] == UInt8(ascii: "\n") {
                var line = inputBuffer[lineStart..<index]
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                if !line.isEmpty { try file(line) }
                lineStart = index + 1
            }
            index += 1
        }
        inputBuffer.removeFirst(lineStart)
        scanOffset = inputBuffer.count
        if inputBuffer.count > maxLineBytes {
            throw PromiseClientError(.invalidResponse, "the daemon sent a line longer than \(maxLineBytes) bytes")
        }
    }

    private func file(_ line: ArraySlice<UInt8>) throws {
        let message: JSONValue
        do {
            message = try JSONValue(parsing: line)
        } catch {
            throw PromiseClientError(
                .invalidResponse, "the daemon sent a line that is not JSON: \(String(decoding: line.prefix(200), as: UTF8.self))")
        }
        if case .array(let elements) = message {
            for element in elements { try fileMessage(element) }
        } else {
            try fileMessage(message)
        }
    }

    private func fileMessage(_ message: JSONValue) throws {
        guard case .object(let members) = message else {
            throw PromiseClientError(.invalidResponse, "the daemon sent a message that is not an object: \(message)")
        }
        if let method = members["method"]?.stringValue, members["id"] == nil {
            queuedNotifications.append(Notification(method: method, params: members["params"] ?? .null))
        } else if let id = members["id"], members["result"] != nil || members["error"] != nil {
            unclaimedResponses.append(message, for: id)
        } else {
            throw PromiseClientError(.invalidResponse, "the daemon sent an unexpected message: \(message)")
        }
    }
}

@available(*, unavailable, message: "a BlockingPromiseClient belongs to one thread at a time")
extension BlockingPromiseClient: Sendable {}
