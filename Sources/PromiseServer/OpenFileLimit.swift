import Foundation
import Glibc
import PromiseModel
import PromiseRPC

/// The daemon's budget of file descriptors, and how many connections fit in it.
///
/// Every client is a descriptor. Under the usual soft limit of 1,024 open
/// files about 1,011 clients fit, the next ones got a silent end of stream
/// (libuv's `EMFILE` fallback accepts and closes), and while the table was
/// full every `then … exec` failed to start. So the daemon raises its soft
/// limit to the hard limit at start, as redis does, and sizes its
/// connection table from what it got, leaving room for everything else.
///
/// ```swift
/// let files = OpenFileLimit.raiseToHardLimit()
/// var limits = DaemonLimits()
/// limits.maxConnections = OpenFileLimit.connections(fitting: files.soft, limits: limits)
/// ```
public enum OpenFileLimit {
    /// Descriptors kept for what is not a client: stdio, the loop's own
    /// (epoll, eventfd, signal pipe, the spare fd libuv keeps for `EMFILE`),
    /// the listening socket, and the store (SQLite's database, WAL, shm
    /// and journal files), with a margin.
    public static let fixedDescriptors = 64
    /// Descriptors one running `then … exec` process holds in the daemon:
    /// its three pipes, plus the pidfd that tells its exit (or, on a kernel
    /// without pidfd_open, the pipe `uv_spawn` uses while it starts).
    public static let descriptorsPerProcess = 4
    /// The largest default: a table this size is far beyond any one user's
    /// scripts, and a hard limit of a million (containers) should not make
    /// the daemon promise a million clients.
    public static let maxDefaultConnections = 65_536
    /// The smallest default, however tight the limit.
    public static let minDefaultConnections = 16

    /// RLIMIT_NOFILE before and after ``raiseToHardLimit()``.
    public struct Change: Sendable, Hashable {
        public var previousSoft: Int
        public var soft: Int
        public var hard: Int
    }

    /// Raises the soft limit on open files to the hard limit (to `fs.nr_open`
    /// when the hard limit is unlimited, since Linux refuses more). Never
    /// lowers it; on failure it stays as it was.
    public static func raiseToHardLimit() -> Change {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            return Change(previousSoft: 1024, soft: 1024, hard: 1024)
        }
        let previous = limit.rlim_cur
        var target = limit.rlim_max
        if target == unlimited { target = rlim_t(kernelMaximum()) }
        if target > previous {
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit.rlim_cur = target }
        }
        return Change(previousSoft: clamp(previous), soft: clamp(limit.rlim_cur), hard: clamp(limit.rlim_max))
    }

    /// The connection limit that fits in `openFiles` descriptors, next to
    /// the fixed ones, `limits.maxRunningProcesses` processes and
    /// `limits.reservedConnections`; between ``minDefaultConnections`` and
    /// ``maxDefaultConnections``. Processes get at most a quarter of what is
    /// not fixed: under a hard limit of 1,024, room for 256 of them would
    /// leave almost no clients (a process that finds no descriptor waits for
    /// one, see `UVLoopServices`).
    public static func connections(fitting openFiles: Int, limits: DaemonLimits) -> Int {
        let available = openFiles - fixedDescriptors
        let processes = min(limits.maxRunningProcesses * descriptorsPerProcess, available / 4)
        let connections = available - processes - limits.reservedConnections
        return min(max(connections, minDefaultConnections), maxDefaultConnections)
    }

    /// `/proc/sys/fs/nr_open`: the most a process may have open (1,048,576 by default).
    private static func kernelMaximum() -> Int {
        let text = try? String(contentsOfFile: "/proc/sys/fs/nr_open", encoding: .utf8)
        return text.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 1 << 20
    }

    /// `RLIM_INFINITY`, which Swift cannot import (its macro is `(~0UL)` cast to a signed type).
    private static let unlimited = rlim_t.max

    private static func clamp(_ value: rlim_t) -> Int {
        value == unlimited || value > rlim_t(Int.max) ? Int.max : Int(value)
    }
}
