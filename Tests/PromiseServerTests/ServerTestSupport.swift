import Foundation
import Glibc
import Logging
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseServer

/// A private temp folder for one test's socket, removed by `remove()`.
/// Short paths: a Unix socket path holds at most 107 bytes.
struct ServerTestDirectory {
    let path: String

    init() {
        var template = Array("/tmp/pst-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A socket path in a subfolder that does not exist yet.
    var socketPath: String { path + "/run/p.sock" }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Polls `condition` every 5 ms until it holds or `timeout` passes.
func serverWaitUntil(timeout: Duration = .seconds(30), _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}

/// A lock-protected value shared between the test and the loop thread.
final class ServerLocked<Value>: @unchecked Sendable {  // `lock` guards `stored`.
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }

    func update<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&stored)
    }
}

/// What the fake handler saw, readable from the test thread.
struct ServerHandlerEvents {
    var opened: [UInt64] = []
    var closed: [UInt64] = []
    var lines: [String] = []
    /// False if any handler call happened off the loop thread.
    var allOnLoopThread = true
    /// The last message `shared SIZE` sent, and where its bytes are.
    var shared: [UInt8]?
    var sharedBase: UnsafeRawPointer?
}

/// A fake RPCHandler: echoes each line, plus a few commands for the tests.
///
/// - `flood N SIZE`: sends N messages of SIZE bytes.
/// - `later MS TEXT`: sends TEXT after MS milliseconds (a loop timer).
/// - `numbered N SIZE`: sends N messages of SIZE bytes, each a new array
///   starting with its index in five digits.
/// - `shared SIZE`: sends one message of SIZE bytes and keeps its array in
///   the events, to tell when the connection lets go of it.
final class ServerEchoHandler: RPCHandler {
    let events: ServerLocked<ServerHandlerEvents>
    let services: any LoopServices
    let executor: LoopExecutor
    private var timers: [any ScheduledTimer] = []

    init(context: ServerContext, events: ServerLocked<ServerHandlerEvents>) {
        self.events = events
        services = context.services
        executor = context.executor
    }

    func connectionOpened(_ peer: any RPCPeer) {
        let onLoop = executor.isLoopThread
        events.update {
            $0.opened.append(peer.connectionID)
            $0.allOnLoopThread = $0.allOnLoopThread && onLoop
        }
    }

    func handle(line: [UInt8], from peer: any RPCPeer) {
        let text = String(decoding: line, as: UTF8.self)
        let onLoop = executor.isLoopThread
        events.update {
            $0.lines.append(text)
            $0.allOnLoopThread = $0.allOnLoopThread && onLoop
        }
        let words = text.split(separator: " ", maxSplits: 2).map(String.init)
        // A peer is sent lines: each message and its newline.
        let newline = UInt8(ascii: "\n")
        switch words.first {
        case "flood":
            let count = Int(words[1])!
            let message = [UInt8](repeating: 0x78, count: Int(words[2])!) + [newline]
            for _ in 0..<count where peer.send(message) {}
        case "numbered":
            let size = Int(words[2])!
            for index in 0..<Int(words[1])! {
                let prefix = Array(String(100_000 + index).utf8.dropFirst())
                guard peer.send(prefix + [UInt8](repeating: 0x79, count: size - 6) + [newline]) else { break }
            }
        case "shared":
            let message = [UInt8](repeating: 0x73, count: Int(words[1])! - 1) + [newline]
            let base = message.withUnsafeBytes { $0.baseAddress }
            events.update {
                $0.shared = message
                $0.sharedBase = base
            }
            peer.send(message)
        case "later":
            let reply = Array((words.count > 2 ? words[2] : "").utf8) + [newline]
            timers.append(services.schedule(afterMilliseconds: UInt64(words[1])!) {
                peer.send(reply)
            })
        default:
            peer.send(line + [newline])
        }
    }

    func connectionClosed(_ peer: any RPCPeer) {
        let onLoop = executor.isLoopThread
        events.update {
            $0.closed.append(peer.connectionID)
            $0.allOnLoopThread = $0.allOnLoopThread && onLoop
        }
    }
}

/// A server on a fresh socket with the echo handler, stopped by `shutDown()`.
struct ServerHarness {
    let directory = ServerTestDirectory()
    let server: Server
    let events = ServerLocked(ServerHandlerEvents())

    init(limits: DaemonLimits = DaemonLimits(), allowedPeerUID: UInt32 = getuid()) throws {
        server = try Server(socketPath: directory.socketPath, limits: limits, logger: serverTestLogger,
                            handlesSignals: false, allowedPeerUID: allowedPeerUID)
        let events = self.events
        server.start { context in ServerEchoHandler(context: context, events: events) }
    }

    var socketPath: String { directory.socketPath }

    func connect() throws -> ServerTestClient {
        try ServerTestClient(path: socketPath)
    }

    /// Stops the server (bounded) and removes the folder. Returns false if it did not stop in time.
    @discardableResult
    func shutDown() -> Bool {
        server.stop()
        let stopped = server.waitUntilStopped(timeout: .seconds(10))
        directory.remove()
        return stopped
    }
}

let serverTestLogger = Logger(label: "server-tests") { _ in SwiftLogNoOpLogHandler() }

/// A blocking Unix-socket client whose every read has a deadline.
final class ServerTestClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private(set) var fd: Int32
    private var framer = LineFramer(maxLineBytes: 64 << 20)
    private var ready: [[UInt8]] = []
    /// True once the server closed its side (EOF or reset).
    private(set) var sawEnd = false

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        guard UnixSocketAddress(path: path)?.connect(fd) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw Failure(description: "connect: \(String(cString: strerror(code)))")
        }
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    /// Writes all of `text` (a newline is added unless `newline` is false).
    func send(_ text: String, newline: Bool = true) throws {
        try sendBytes(Array((newline ? text + "\n" : text).utf8))
    }

    func sendBytes(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    /// Shuts down the writing side (the server sees end of stream).
    func shutdownWrite() {
        Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Shuts down the reading side: the server's writes to it fail (EPIPE),
    /// while it still reads what this client sends.
    func shutdownRead() {
        Glibc.shutdown(fd, Int32(SHUT_RD))
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// The next line, or nil at end of stream. Throws on timeout.
    func readLine(timeout: Duration = .seconds(5)) throws -> String? {
        try readLineBytes(timeout: timeout).map { String(decoding: $0, as: UTF8.self) }
    }

    func readLineBytes(timeout: Duration = .seconds(5)) throws -> [UInt8]? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while ready.isEmpty {
            if sawEnd { return nil }
            let left = deadline - clock.now
            guard left > .zero else { throw Failure(description: "timed out waiting for a line") }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            guard poll(&entry, 1, max(1, milliseconds)) >= 0 else { continue }
            if entry.revents == 0 { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count <= 0 {
                if count < 0 && errno == EINTR { continue }
                sawEnd = true
                continue
            }
            try framer.feed(buffer[0..<count]) { ready.append($0) }
        }
        return ready.removeFirst()
    }

    /// Reads until the server closes the connection; returns the lines read. Throws on timeout.
    func readToEnd(timeout: Duration = .seconds(5)) throws -> [String] {
        var lines: [String] = []
        while let line = try readLine(timeout: timeout) {
            lines.append(line)
        }
        return lines
    }
}
