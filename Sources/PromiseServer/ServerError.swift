/// Why the server could not start.
///
/// ```swift
/// do {
///     let server = try Server(socketPath: path, limits: limits, logger: logger)
/// } catch let error as ServerError where error.code == .alreadyRunning {
///     print("a daemon already listens on \(path)")
/// }
/// ```
public struct ServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. The set is open: new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Another process accepts connections on the socket path.
        public static let alreadyRunning = Code("alreadyRunning")
        /// The path is longer than a Unix socket address can hold (107 bytes).
        public static let socketPathTooLong = Code("socketPathTooLong")
        /// Something other than a socket is at the path; it is left alone.
        public static let notASocket = Code("notASocket")
        /// The socket's folder cannot be created, or is not safe to use.
        public static let folderUnusable = Code("folderUnusable")
        /// Binding or listening failed.
        public static let cannotListen = Code("cannotListen")
    }

    public let code: Code
    /// A sentence for people, naming the path.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
