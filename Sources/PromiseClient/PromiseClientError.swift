#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a ``BlockingPromiseClient`` could not do what it was asked, apart from error
/// answers of the daemon (those are thrown as ``RPCError``).
///
/// ```swift
/// do {
///     let client = try BlockingPromiseClient(socketPath: "/run/user/1000/promised.sock")
/// } catch let error as PromiseClientError where error.code == .daemonUnreachable {
///     print(error)   // daemon not running at /run/user/1000/promised.sock; start it with `promised` …
/// }
/// ```
public struct PromiseClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. The set is open: more codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Nothing listens on the socket (no such file, connection refused, no permission).
        public static let daemonUnreachable = Code(rawValue: "daemonUnreachable")
        /// The daemon closed the connection before the answer came.
        public static let connectionClosed = Code(rawValue: "connectionClosed")
        /// No answer (or notification) within the time asked for.
        public static let timedOut = Code(rawValue: "timedOut")
        /// The daemon sent something that is not a JSON-RPC 2.0 message.
        public static let invalidResponse = Code(rawValue: "invalidResponse")
        /// A socket call failed for another reason.
        public static let ioFailure = Code(rawValue: "ioFailure")
        /// The process listening on the socket runs as another user (`SO_PEERCRED`):
        /// nothing was sent to it. Root is refused too.
        public static let foreignDaemon = Code(rawValue: "foreignDaemon")
        /// The socket path does not fit in `sockaddr_un`.
        public static let socketPathTooLong = Code(rawValue: "socketPathTooLong")
    }

    public var code: Code
    /// One line for people, suitable for stderr.
    public var message: String
    /// The `errno` behind the failure, when a system call failed.
    public var errno: Int32?

    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String { message }

    /// The error for a failed `connect(2)` to `path`.
    static func connectFailed(path: String, errno err: Int32) -> PromiseClientError {
        switch err {
        case ENOENT, ECONNREFUSED, ENOTDIR:
            return PromiseClientError(
                .daemonUnreachable,
                "daemon not running at \(path); start it with `promised` (or `promised --socket \(path)`)",
                errno: err)
        case EACCES, EPERM:
            return PromiseClientError(
                .daemonUnreachable,
                "no permission to connect to the daemon at \(path) (\(errorText(err)))", errno: err)
        default:
            return PromiseClientError(
                .daemonUnreachable,
                "cannot connect to the daemon at \(path): \(errorText(err))", errno: err)
        }
    }

    static func systemCall(_ function: String, errno err: Int32) -> PromiseClientError {
        PromiseClientError(.ioFailure, "\(function) failed: \(errorText(err))", errno: err)
    }

    static func errorText(_ err: Int32) -> String {
        String(cString: strerror(err))
    }
}
