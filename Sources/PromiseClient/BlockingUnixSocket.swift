import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc

private let posixClose = Glibc.close
private let posixRead = Glibc.read
#elseif canImport(Darwin)
import Darwin

private let posixClose = Darwin.close
private let posixRead = Darwin.read
#endif

/// A connected, blocking `AF_UNIX` stream socket with deadline-bounded reads.
///
/// Written by hand on plain POSIX calls: the client is a short-lived, blocking
/// command-line helper, and an event-loop library (swift-nio, libuv) would add a
/// thread and a dependency for a handful of `connect`/`send`/`poll`/`read` calls.
final class BlockingUnixSocket {
    private(set) var fileDescriptor: Int32

    /// Connects to the socket at `path`, and makes sure a process of this
    /// user listens there before anything is sent (see ``checkPeerIsSameUser(_:)``).
    init(connectingTo path: String) throws(PromiseClientError) {
        guard let address = UnixSocketAddress(path: path) else {
            throw PromiseClientError(
                .socketPathTooLong,
                "socket path \(path) is empty or longer than \(UnixSocketAddress.maxPathBytes) bytes")
        }

        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw PromiseClientError.systemCall("socket", errno: errno) }

        if address.connect(fd) != 0 {
            let err = errno
            _ = posixClose(fd)
            throw PromiseClientError.connectFailed(path: path, errno: err)
        }
        fileDescriptor = fd
        do {
            try Self.checkPeerIsSameUser(fd, path: path)
        } catch {
            close()
            throw error
        }
    }

    /// Refuses a socket whose listening process runs as another uid, root
    /// included: whoever answers on it learns every value sent and can
    /// forge every result, and a socket path under /tmp or in
    /// `$PROMISED_SOCKET` may have been planted by anyone. Only the daemon
    /// of this same user is trusted.
    private static func checkPeerIsSameUser(_ fd: Int32, path: String) throws(PromiseClientError) {
        #if canImport(Glibc)
        // `struct ucred`, which Swift's Glibc does not import (glibc declares it under _GNU_SOURCE only).
        var credentials = (pid: pid_t(0), uid: uid_t(0), gid: gid_t(0))
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else {
            throw PromiseClientError.systemCall("getsockopt(SO_PEERCRED)", errno: errno)
        }
        let peer = credentials.uid
        #else
        var peer = uid_t(0)
        var group = gid_t(0)
        guard getpeereid(fd, &peer, &group) == 0 else {
            throw PromiseClientError.systemCall("getpeereid", errno: errno)
        }
        #endif
        let own = getuid()
        guard peer == own else {
            throw PromiseClientError(
                .foreignDaemon,
                "refusing the daemon at \(path): it runs as uid \(peer), not as this user (uid \(own)); "
                    + "anyone could have put that socket there")
        }
    }

    deinit { close() }

    var isOpen: Bool { fileDescriptor >= 0 }

    func close() {
        if fileDescriptor >= 0 {
            _ = posixClose(fileDescriptor)
            fileDescriptor = -1
        }
    }

    /// Hands the descriptor over to the caller, who closes it; this socket is closed after.
    func detachFileDescriptor() -> Int32 {
        defer { fileDescriptor = -1 }
        return fileDescriptor
    }

    /// Stops sending; the peer sees end of input while we can still read.
    func shutdownWrite() {
        if fileDescriptor >= 0 { _ = shutdown(fileDescriptor, Int32(SHUT_WR)) }
    }

    /// Writes all of `bytes`, blocking until the kernel took them.
    func writeAll(_ bytes: [UInt8]) throws(PromiseClientError) {
        guard fileDescriptor >= 0 else {
            throw PromiseClientError(.connectionClosed, "the connection to the daemon is closed")
        }
        try Self.writeAll(bytes, to: fileDescriptor)
    }

    /// Writes all of `bytes` to socket `fd`, blocking until the kernel took them;
    /// a peer that closed is ``PromiseClientError/Code/connectionClosed``.
    static func writeAll(_ bytes: [UInt8], to fd: Int32) throws(PromiseClientError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                let err = errno
                if err == EINTR { continue }
                if err == EPIPE || err == ECONNRESET || err == ENOTCONN {
                    throw PromiseClientError(.connectionClosed, "the daemon closed the connection", errno: err)
                }
                throw PromiseClientError.systemCall("send", errno: err)
            }
            offset += written
        }
    }

    /// Reads what is available, waiting until `deadline` (nil: forever).
    /// Returns nil on timeout and an empty array at end of input.
    func read(maximum: Int = 65_536, deadline: ContinuousClock.Instant?) throws(PromiseClientError) -> [UInt8]? {
        guard fileDescriptor >= 0 else { return [] }
        while true {
            var descriptor = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Self.pollMilliseconds(until: deadline))
            if ready < 0 {
                if errno == EINTR { continue }
                throw PromiseClientError.systemCall("poll", errno: errno)
            }
            if ready == 0 {
                if let deadline, ContinuousClock.now >= deadline { return nil }
                continue
            }
            var buffer = [UInt8](repeating: 0, count: maximum)
            let count = buffer.withUnsafeMutableBytes { posixRead(fileDescriptor, $0.baseAddress!, $0.count) }
            if count < 0 {
                let err = errno
                if err == EINTR || err == EAGAIN { continue }
                if err == ECONNRESET { return [] }
                throw PromiseClientError.systemCall("read", errno: err)
            }
            buffer.removeSubrange(count...)
            return buffer
        }
    }

    /// The `poll(2)` timeout for a deadline: -1 waits forever; long waits are
    /// cut into slices so a far deadline cannot overflow an `Int32`.
    private static func pollMilliseconds(until deadline: ContinuousClock.Instant?) -> Int32 {
        guard let deadline else { return -1 }
        let remaining = ContinuousClock.now.duration(to: deadline)
        if remaining <= .zero { return 0 }
        let (seconds, attoseconds) = remaining.components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(min(milliseconds, 60_000))
    }
}
