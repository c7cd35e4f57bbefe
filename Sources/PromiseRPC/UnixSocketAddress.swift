#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A Unix-domain socket address, for code that calls `bind` or `connect`
/// itself: the client, the server's stale-socket check, tests and tools.
///
/// ```swift
/// guard let address = UnixSocketAddress(path: "/tmp/p.sock") else { … }   // too long or empty
/// let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
/// if address.connect(fd) != 0 { perror("connect") }
/// ```
public struct UnixSocketAddress: Sendable, Hashable {
    /// The longest path a `sockaddr_un` holds, without its terminating NUL (107 on Linux).
    public static let maxPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    public let path: String

    /// nil when `path` is empty or longer than ``maxPathBytes``.
    public init?(path: String) {
        guard !path.utf8.isEmpty, path.utf8.count <= Self.maxPathBytes else { return nil }
        self.path = path
    }

    /// Calls `body` with the address as a `sockaddr` and its length.
    public func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        return try withUnsafePointer(to: &address) {
            try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    /// `connect(2)` on `fd`: 0, or -1 with `errno` set.
    public func connect(_ fd: Int32) -> Int32 {
        withSocketAddress { address, length in Glibc.connect(fd, address, length) }
    }

    /// `bind(2)` on `fd`: 0, or -1 with `errno` set.
    public func bind(_ fd: Int32) -> Int32 {
        withSocketAddress { address, length in Glibc.bind(fd, address, length) }
    }
}
