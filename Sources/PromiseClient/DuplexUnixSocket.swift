import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc

private let posixClose = Glibc.close
private let posixRead = Glibc.read
private let posixShutdown = Glibc.shutdown
#elseif canImport(Darwin)
import Darwin

private let posixClose = Darwin.close
private let posixRead = Darwin.read
private let posixShutdown = Darwin.shutdown
#endif

/// A connected `AF_UNIX` stream socket that one thread reads while others
/// write: the descriptor is fixed for the object's life and closed only by
/// `deinit`, so no thread can ever use a number the kernel gave to another
/// file. ``shutdown()`` ends both directions at once, which wakes a blocked reader.
final class DuplexUnixSocket: Sendable {
    let fileDescriptor: Int32

    /// Connects to `path` and checks that a process of this user listens there
    /// (as ``BlockingPromiseClient`` does).
    init(connectingTo path: String) throws(PromiseClientError) {
        fileDescriptor = try BlockingUnixSocket(connectingTo: path).detachFileDescriptor()
    }

    deinit { _ = posixClose(fileDescriptor) }

    /// Ends reading and writing: a blocked ``read(into:)`` returns 0, writes fail.
    func shutdown() {
        _ = posixShutdown(fileDescriptor, Int32(SHUT_RDWR))
    }

    /// Writes all of `bytes`, blocking while the kernel's buffer is full.
    func writeAll(_ bytes: [UInt8]) throws(PromiseClientError) {
        try BlockingUnixSocket.writeAll(bytes, to: fileDescriptor)
    }

    /// Reads what is there, blocking until something is.
    /// - Returns: the number of bytes read; 0 at end of input (or after ``shutdown()``).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(PromiseClientError) -> Int {
        while true {
            let count = posixRead(fileDescriptor, buffer.baseAddress!, buffer.count)
            if count >= 0 { return count }
            let err = errno
            if err == EINTR || err == EAGAIN { continue }
            if err == ECONNRESET { return 0 }
            throw PromiseClientError.systemCall("read", errno: err)
        }
    }
}
