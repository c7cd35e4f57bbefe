internal import CLibUV
internal import CProcessSpawn
import Glibc
import Synchronization

/// The small process that watches one `then … exec` command: the daemon
/// starts its own executable again as `promised --step-monitor GRACE -- ARGV…`
/// (``ChildProcess``), and that process starts the command and stays its
/// parent until everything the command started has ended.
///
/// The monitor is the child subreaper (`PR_SET_CHILD_SUBREAPER`) of its
/// step: a process the command starts in a session of its own
/// (`setsid sleep 300 &`) stays below the monitor when its parent exits, so
/// that the monitor finds it in /proc by its parents and kills it when the
/// command ends, is cancelled (SIGTERM, then SIGKILL after the grace), or
/// its stdout passes the limit (SIGUSR1: SIGKILL at once), and when a
/// restarted daemon stops a command its predecessor left running (it
/// signals the monitor's group). The monitor ends as the command did (same
/// exit status, same signal), so the daemon sees the command's outcome.
///
/// ```swift
/// @main struct Promised: ParsableCommand {
///     static func main() {
///         StepMonitor.takeOverIfAsked()  // never returns in a monitor
///         main(nil)
///     }
/// }
/// ```
public enum StepMonitor {
    /// The option that makes the executable a step's monitor.
    static let option = "--step-monitor"

    /// The executable started as a monitor: the daemon's own, even once an
    /// upgrade has replaced its file.
    static let executable = "/proc/self/exe"

    /// How long after the grace a monitor still running is killed by the
    /// daemon: the monitor kills its command's processes at the grace itself.
    static let backstopMilliseconds: UInt64 = 1_000

    /// Whether this executable can be a monitor (it called ``takeOverIfAsked(_:)``).
    private static let available = Atomic<Bool>(false)

    /// Whether commands run under a monitor: only in an executable that
    /// calls ``takeOverIfAsked(_:)``, on a kernel with pidfd_open.
    static var isAvailable: Bool { available.load(ordering: .relaxed) && PosixSpawnProcess.isAvailable }

    /// Becomes a step's monitor when `arguments` ask for it, and then never
    /// returns; else marks this executable as one that can be, and returns.
    /// Call it first thing in `main`, before any thread starts.
    public static func takeOverIfAsked(_ arguments: [String] = CommandLine.arguments) {
        guard arguments.count >= 2, arguments[1] == option else {
            available.store(true, ordering: .relaxed)
            return
        }
        guard arguments.count >= 5, let grace = UInt64(arguments[2]), arguments[3] == "--" else {
            fail("usage: promised \(option) GRACE_MS -- PROGRAM [ARG…]", status: 64)
        }
        run(argv: Array(arguments[4...]), graceMilliseconds: grace)
    }

    /// The arguments that start a monitor for `argv`.
    static func arguments(for argv: [String], graceMilliseconds: UInt64) -> [String] {
        ["promised", option, String(graceMilliseconds), "--"] + argv
    }

    /// The waits before each new try of a start that failed for a reason
    /// that passes (a program still open for writing: `ETXTBSY`; no file
    /// descriptor left: `EMFILE`, `ENFILE`), as the daemon waits to start a monitor.
    static let retryMilliseconds: [UInt32] = [10, 20, 50, 100, 200, 500, 1_000, 2_000]

    private static func run(argv: [String], graceMilliseconds: UInt64) -> Never {
        let prepared = CProcessSpawn_monitor_prepare()
        if prepared != 0 {
            fail("cannot run \(argv[0]): \(UVError(code: -prepared, function: "prctl"))", status: 127)
        }
        let arguments = CStringArray(argv)
        var pid: Int32 = 0
        var error = CProcessSpawn_monitor_start(&pid, arguments.pointer)
        for wait in retryMilliseconds where error == ETXTBSY || error == EMFILE || error == ENFILE {
            usleep(wait * 1_000)
            error = CProcessSpawn_monitor_start(&pid, arguments.pointer)
        }
        arguments.free()
        if error != 0 {
            // As the daemon words a command that cannot start.
            fail("cannot run \(argv[0]): \(UVError(code: -error, function: "uv_spawn"))", status: 127)
        }
        CProcessSpawn_monitor_wait(pid, graceMilliseconds)
        fatalError("CProcessSpawn_monitor_wait returned")
    }

    private static func fail(_ message: String, status: Int32) -> Never {
        let line = Array((message + "\n").utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(status)
    }
}
