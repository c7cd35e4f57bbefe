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
/// The monitor holds the command's stdout and stderr: it forwards them to
/// the daemon while the daemon reads them and, given `--files PREFIX`,
/// keeps them and writes the command's outcome there (``StepOutputFiles``),
/// so that a daemon stopped or killed meanwhile does not lose the step: the
/// next one re-attaches to the monitor, or settles the step from the files.
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
        guard let invocation = Invocation(arguments) else {
            fail("usage: promised \(option) GRACE_MS [--files PREFIX] [--limit BYTES] -- PROGRAM [ARG…]", status: 64)
        }
        run(invocation)
    }

    /// What a monitor is asked to do: `promised --step-monitor GRACE_MS
    /// [--files PREFIX] [--limit BYTES] -- PROGRAM [ARG…]`. The command line
    /// is the daemon's own business: only daemons of this build start monitors.
    struct Invocation: Hashable, Sendable {
        var argv: [String]
        var graceMilliseconds: UInt64
        /// Where the output and the outcome are written (``StepOutputFiles``), if anywhere.
        var files: String?
        /// Bytes of stdout kept (more fails the step), and of the end of stderr.
        var limit: Int

        init(argv: [String], graceMilliseconds: UInt64, files: String? = nil, limit: Int = 1 << 20) {
            self.argv = argv
            self.graceMilliseconds = graceMilliseconds
            self.files = files
            self.limit = limit
        }

        /// Reads a monitor's command line; nil when it is not one.
        init?(_ arguments: [String]) {
            guard arguments.count >= 3, arguments[1] == StepMonitor.option, let grace = UInt64(arguments[2]) else {
                return nil
            }
            var index = 3
            var files: String?
            var limit = 1 << 20
            while index + 1 < arguments.count, arguments[index] != "--" {
                switch arguments[index] {
                case "--files" where !arguments[index + 1].isEmpty: files = arguments[index + 1]
                case "--limit": guard let value = Int(arguments[index + 1]), value >= 0 else { return nil }
                    limit = value
                default: return nil
                }
                index += 2
            }
            guard index + 1 < arguments.count, arguments[index] == "--" else { return nil }
            self.init(argv: Array(arguments[(index + 1)...]), graceMilliseconds: grace, files: files, limit: limit)
        }

        /// The arguments that start a monitor for it.
        var arguments: [String] {
            var arguments = ["promised", StepMonitor.option, String(graceMilliseconds)]
            if let files { arguments += ["--files", files, "--limit", String(limit)] }
            return arguments + ["--"] + argv
        }
    }

    /// The arguments that start a monitor for `argv`.
    static func arguments(for argv: [String], graceMilliseconds: UInt64, files: String? = nil, limit: Int = 1 << 20)
        -> [String]
    {
        Invocation(argv: argv, graceMilliseconds: graceMilliseconds, files: files, limit: limit).arguments
    }

    /// Whether process `pid` is a monitor writing its outcome to `files`:
    /// its command line, read from /proc, says so. A restarted daemon
    /// watches only such a process, not whatever now has a stored pid.
    static func isMonitor(pid: Int32, writing files: String) -> Bool {
        guard let text = LeftoverProcessGroup.readFile("/proc/\(pid)/cmdline") else { return false }
        let arguments = text.split(separator: "\0", omittingEmptySubsequences: false).map(String.init)
        return Invocation(arguments)?.files == files
    }

    /// The waits before each new try of a start that failed for a reason
    /// that passes (a program still open for writing: `ETXTBSY`; no file
    /// descriptor left: `EMFILE`, `ENFILE`), as the daemon waits to start a monitor.
    static let retryMilliseconds: [UInt32] = [10, 20, 50, 100, 200, 500, 1_000, 2_000]

    private static func run(_ invocation: Invocation) -> Never {
        let argv = invocation.argv
        let prepared = CProcessSpawn_monitor_prepare()
        if prepared != 0 {
            fail("cannot run \(argv[0]): \(UVError(code: -prepared, function: "prctl"))", status: 127)
        }
        // Never freed: the monitor ends in CProcessSpawn_monitor_wait.
        let prefix = invocation.files.flatMap { strdup($0) }
        var output = CProcessSpawn_monitor_output()
        let opened = CProcessSpawn_monitor_open_output(&output, prefix.map { UnsafePointer($0) }, Int64(invocation.limit))
        if opened != 0 {
            fail("cannot run \(argv[0]): \(UVError(code: -opened, function: "socketpair"))", status: 127)
        }
        let arguments = CStringArray(argv)
        var pid: Int32 = 0
        var error = CProcessSpawn_monitor_start(&pid, arguments.pointer, &output)
        for wait in retryMilliseconds where error == ETXTBSY || error == EMFILE || error == ENFILE {
            usleep(wait * 1_000)
            error = CProcessSpawn_monitor_start(&pid, arguments.pointer, &output)
        }
        arguments.free()
        if error != 0 {
            // As the daemon words a command that cannot start; no outcome is
            // written, and the daemon that started it reads this message.
            fail("cannot run \(argv[0]): \(UVError(code: -error, function: "uv_spawn"))", status: 127)
        }
        CProcessSpawn_monitor_wait(pid, invocation.graceMilliseconds, &output)
        fatalError("CProcessSpawn_monitor_wait returned")
    }

    private static func fail(_ message: String, status: Int32) -> Never {
        let line = Array((message + "\n").utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(status)
    }
}
