import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// A bare socket to the daemon for what a well-behaved client never sends:
/// bytes that are not JSON, not UTF-8, too long; or not reading at all.
final class E2ERawConnection {
    let fd: Int32
    private var buffer: [UInt8] = []
    private(set) var reachedEnd = false

    init(path: String) throws {
        // Close-on-exec: a daemon that another test starts meanwhile would
        // inherit it, and hold the connection open after this one closes.
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard UnixSocketAddress(path: path)?.connect(fd) == 0 else {
            close(fd)
            throw E2EHarnessError("connect to \(path) failed: errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// Writes all bytes; false when the daemon closed the connection meanwhile.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool { Self.sendAll(fd, bytes) }

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR; false
    /// once the peer has closed the connection (no SIGPIPE).
    @Sendable static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    @discardableResult
    func writeLine(_ text: String) -> Bool { write(Array((text + "\n").utf8)) }

    /// The next line, parsed; nil at end of input or after `timeout`.
    func readMessage(timeout: Duration = .seconds(5)) throws -> JSONValue? {
        guard let line = readLine(timeout: timeout) else { return nil }
        return try JSONValue(parsing: line)
    }

    /// The next line without its "\n"; nil at end of input or after `timeout`.
    func readLine(timeout: Duration = .seconds(5)) -> [UInt8]? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                return line
            }
            if reachedEnd || ContinuousClock.now >= deadline { return nil }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 20) >= 0 else { return nil }
            if descriptor.revents == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 {
                reachedEnd = true
                continue
            }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    /// Reads and discards until the daemon closes the connection; false if it
    /// is still open after `timeout`. Returns the number of lines seen.
    func drainUntilClosed(timeout: Duration = .seconds(10)) -> (closed: Bool, lines: Int) {
        var lines = 0
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if readLine(timeout: .milliseconds(50)) != nil { lines += 1 }
            if reachedEnd && buffer.firstIndex(of: UInt8(ascii: "\n")) == nil { return (true, lines) }
        }
        return (false, lines)
    }
}
