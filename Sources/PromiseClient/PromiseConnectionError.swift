import PromiseJSON
import PromiseModel
import PromiseRPC

/// Why a ``PromiseConnection`` call failed: the daemon's error answer, typed,
/// or what went wrong on this side (the connection, a value that does not
/// encode or decode).
///
/// A rejected or cancelled remote promise is not an error of the call: `get`
/// answers its record. A mirror made with ``PromiseConnection/promise(_:as:cancellingRemote:)``
/// is rejected with the record's reason (``RemoteRejection``), cancelled when
/// the remote is, and rejected with this error only for a value that does not
/// decode (``Code/decoding``) or a connection that is gone.
///
/// ```swift
/// do {
///     _ = try await remote.create("build/lib")
/// } catch let error as PromiseConnectionError where error.code == .exists {
///     print(error.message)   // promise "build/lib" already exists
/// }
/// ```
public struct PromiseConnectionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. The set is open: more codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The id is taken (-32006).
        public static let exists = Code(rawValue: "exists")
        /// The promise has settled already (-32002); ``PromiseConnectionError/record`` is its record.
        public static let alreadySettled = Code(rawValue: "alreadySettled")
        /// No promise has that id (-32001).
        public static let noSuchPromise = Code(rawValue: "noSuchPromise")
        /// The daemon refused: a limit was reached (-32004), the lease is
        /// another connection's (-32003), or the socket is served by another user.
        public static let refused = Code(rawValue: "refused")
        /// A param the daemon does not accept (-32602), such as an id that is not printable.
        public static let invalidParams = Code(rawValue: "invalidParams")
        /// A `wait` with a timeout that passed (-32005).
        public static let timedOut = Code(rawValue: "timedOut")
        /// Any other error answer of the daemon; ``PromiseConnectionError/rpcCode`` has its code.
        public static let daemonError = Code(rawValue: "daemonError")
        /// Nothing listens on the socket, or it cannot be reached.
        public static let unreachable = Code(rawValue: "unreachable")
        /// The connection was lost before the answer came.
        public static let connectionLost = Code(rawValue: "connectionLost")
        /// ``PromiseConnection/close()`` was called.
        public static let closed = Code(rawValue: "closed")
        /// A value does not decode as the type asked for.
        public static let decoding = Code(rawValue: "decoding")
        /// A value does not encode to JSON.
        public static let encoding = Code(rawValue: "encoding")
        /// The daemon sent something that is not what the protocol says.
        public static let invalidResponse = Code(rawValue: "invalidResponse")
    }

    public var code: Code
    /// One line for people: the daemon's message for an error answer.
    public var message: String
    /// The JSON-RPC error code of the daemon's answer, when there was one.
    public var rpcCode: Int?
    /// The `data` of the daemon's error answer, when there was one.
    public var data: JSONValue?

    public init(_ code: Code, _ message: String, rpcCode: Int? = nil, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.rpcCode = rpcCode
        self.data = data
    }

    public var description: String { message }

    /// The record that came with the error: the settled promise's for
    /// ``Code/alreadySettled``, the pending one's for a ``Code/timedOut`` wait.
    public var record: PromiseRecord? { data.flatMap { try? PromiseRecord($0) } }

    /// The typed form of an error answer of the daemon.
    init(_ error: RPCError) {
        let code: Code
        switch error.code {
        case .alreadyExists: code = .exists
        case .alreadySettled: code = .alreadySettled
        case .noSuchPromise: code = .noSuchPromise
        case .limitExceeded, .permissionDenied: code = .refused
        case .invalidParams: code = .invalidParams
        case .waitTimedOut: code = .timedOut
        default: code = .daemonError
        }
        self.init(code, error.message, rpcCode: error.code.rawValue, data: error.data)
    }

    /// The typed form of a failure of the socket layer.
    init(_ error: PromiseClientError) {
        switch error.code {
        case .foreignDaemon: self.init(.refused, error.message)
        case .connectionClosed: self.init(.connectionLost, error.message)
        case .invalidResponse: self.init(.invalidResponse, error.message)
        default: self.init(.unreachable, error.message)
        }
    }
}
