#if canImport(Glibc)
import Glibc
#endif

/// The process group of a `then … exec` command that a daemon killed with
/// `kill -9` left running, as its stored promise recorded it: stopped at the
/// next start, but only if it is still that very process
/// (docs/DURABILITY.md, "Commands left running by a crash").
///
/// A pid alone is not an identity: after a crash and a reboot, or just many
/// processes later, the number may belong to another program, and signalling
/// it would hit a stranger. The kernel's start time of the process (field 22
/// of `/proc/<pid>/stat`, in clock ticks since boot) is recorded with the pid
/// when the command starts; the group is signalled only while the process
/// with that pid has that same start time. A process that has ended, or a pid
/// now used by another process, is left alone.
///
/// ```swift
/// let group = LeftoverProcessGroup(pid: 4242, startTime: 1_234_567)
/// if group.stopIfSame(using: .system) { … }   // TERM sent to group 4242; KILL later
/// ```
struct LeftoverProcessGroup: Sendable, Hashable {
    /// The command's pid, which is also its process group's id (it called `setsid()`).
    var pid: Int32
    /// Field 22 of `/proc/<pid>/stat` when it started.
    var startTime: UInt64

    /// Where processes are looked up and signalled: the system's, or a test's fake.
    struct System: Sendable {
        /// The start time of process `pid` now, or nil when there is none.
        var startTime: @Sendable (Int32) -> UInt64?
        /// Sends a signal to a process group; false when there is none.
        var signalGroup: @Sendable (_ group: Int32, _ signal: Int32) -> Bool

        static let system = System(
            startTime: { LeftoverProcessGroup.readStartTime(of: $0) },
            signalGroup: { group, signal in kill(-group, signal) == 0 })
    }

    /// Whether the process `pid` is still the one recorded.
    func isSame(in system: System) -> Bool {
        pid > 1 && system.startTime(pid) == startTime
    }

    /// Sends `signal` to the group if its leader is still the process recorded.
    /// - Returns: True when the signal was sent.
    @discardableResult
    func signalIfSame(_ signal: Int32, in system: System) -> Bool {
        guard isSame(in: system) else { return false }
        return system.signalGroup(pid, signal)
    }

    /// Field 22 (`starttime`) of `/proc/<pid>/stat`, or nil when the process
    /// does not exist, has ended but is not yet reaped (a zombie: nothing left
    /// to stop), or /proc cannot be read. The second field, the
    /// command's name in parentheses, may hold spaces and parentheses: the
    /// fields are counted from the last ")".
    static func readStartTime(of pid: Int32) -> UInt64? {
        guard pid > 0, let text = readFile("/proc/\(pid)/stat") else { return nil }
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        // fields[0] is field 3 (state), so field 22 is fields[19].
        guard fields.count > 19, fields[0] != "Z", fields[0] != "X" else { return nil }
        return UInt64(fields[19])
    }

    /// A small file of /proc, whole; nil when it cannot be read.
    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1_024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: buffer[..<count])
            if bytes.count > 16_384 { return nil }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
