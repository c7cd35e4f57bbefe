import Glibc

/// Why a socket call failed, with errno's text.
struct SocketError: Error, CustomStringConvertible {
    let description: String

    init(_ what: String, errno code: Int32 = errno) {
        description = "\(what): \(String(cString: strerror(code)))"
    }

    init(message: String) {
        description = message
    }
}

// Plain blocking POSIX sockets rather than swift-nio or BlockingPromiseClient: the
// clients must cost the same for every server measured, and as little as
// possible, so that the figures are the servers'.

private func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) throws -> T {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
        throw SocketError(message: "socket path too long: \(path)")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
}

/// A connected stream socket to `path`.
func connectUnix(_ path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SocketError("socket") }
    let result = try withAddress(path) { connect(fd, $0, $1) }
    guard result == 0 else {
        let code = errno
        close(fd)
        throw SocketError("connect \(path)", errno: code)
    }
    return fd
}

/// A listening stream socket bound to `path`.
func listenUnix(_ path: String, backlog: Int32 = 1024) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SocketError("socket") }
    unlink(path)
    guard try withAddress(path, { bind(fd, $0, $1) }) == 0 else { throw SocketError("bind \(path)") }
    guard listen(fd, backlog) == 0 else { throw SocketError("listen") }
    return fd
}

/// Writes every byte, across short writes and interruptions.
func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
    try bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let written = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw SocketError("write")
            }
            offset += written
        }
    }
}

/// Reads a blocking socket through a buffer, a line or a byte count at a time.
final class BufferedReader {
    let fd: Int32
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0

    init(fd: Int32, capacity: Int = 1 << 16) {
        self.fd = fd
        buffer = [UInt8](repeating: 0, count: capacity)
    }

    private func fill() throws {
        if start == end {
            start = 0
            end = 0
        } else if start > 0 {
            buffer.withUnsafeMutableBytes { raw in
                _ = memmove(raw.baseAddress!, raw.baseAddress! + start, end - start)
            }
            end -= start
            start = 0
        }
        if end == buffer.count { buffer.append(contentsOf: [UInt8](repeating: 0, count: buffer.count)) }
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in Glibc.read(fd, raw.baseAddress! + end, raw.count - end) }
            if count > 0 {
                end += count
                return
            }
            if count == 0 { throw SocketError(message: "connection closed by the server") }
            if errno != EINTR { throw SocketError("read") }
        }
    }

    /// The next line, without its `\n`.
    func readLine() throws -> ArraySlice<UInt8> {
        var searched = start
        while true {
            if let newline = buffer[searched..<end].firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[start..<newline]
                start = newline + 1
                return line
            }
            let offset = end - start
            try fill()
            searched = start + offset
        }
    }

    /// The next `count` bytes.
    func read(count: Int) throws -> ArraySlice<UInt8> {
        while end - start < count { try fill() }
        let bytes = buffer[start..<start + count]
        start += count
        return bytes
    }
}

extension Collection<UInt8> {
    /// Whether `needle` occurs in these bytes.
    func contains(bytes needle: [UInt8]) -> Bool {
        guard let first = needle.first, count >= needle.count else { return false }
        var index = startIndex
        while let found = self[index...].firstIndex(of: first) {
            if self[found...].starts(with: needle) { return true }
            index = self.index(after: found)
        }
        return false
    }
}
