import Glibc

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
    package static let option = "--step-monitor"

    /// The executable started as a monitor: the daemon's own, even once an
    /// upgrade has replaced its file.
    package static let executable = "/proc/self/exe"

    /// How long after the grace a monitor still running is killed by the
    /// daemon: the monitor kills its command's processes at the grace itself.
    package static let backstopMilliseconds: UInt64 = 1_000

    /// What a monitor is asked to do: `promised --step-monitor GRACE_MS
    /// [--files PREFIX] [--limit BYTES] -- PROGRAM [ARG…]`. The command line
    /// is the daemon's own business: only daemons of this build start monitors.
    package struct Invocation: Hashable, Sendable {
        package var argv: [String]
        package var graceMilliseconds: UInt64
        /// Where the output and the outcome are written (``StepOutputFiles``), if anywhere.
        package var files: String?
        /// Bytes of stdout kept (more fails the step), and of the end of stderr.
        package var limit: Int

        package init(argv: [String], graceMilliseconds: UInt64, files: String? = nil, limit: Int = 1 << 20) {
            self.argv = argv
            self.graceMilliseconds = graceMilliseconds
            self.files = files
            self.limit = limit
        }

        /// Reads a monitor's command line; nil when it is not one.
        package init?(_ arguments: [String]) {
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
        package var arguments: [String] {
            var arguments = ["promised", StepMonitor.option, String(graceMilliseconds)]
            if let files { arguments += ["--files", files, "--limit", String(limit)] }
            return arguments + ["--"] + argv
        }
    }

    /// The arguments that start a monitor for `argv`.
    package static func arguments(for argv: [String], graceMilliseconds: UInt64, files: String? = nil, limit: Int = 1 << 20)
        -> [String]
    {
        Invocation(argv: argv, graceMilliseconds: graceMilliseconds, files: files, limit: limit).arguments
    }

    /// Whether process `pid` is a monitor writing its outcome to `files`:
    /// its command line, read from /proc, says so. A restarted daemon
    /// watches only such a process, not whatever now has a stored pid.
    package static func isMonitor(pid: Int32, writing files: String) -> Bool {
        guard let text = LeftoverProcessGroup.readFile("/proc/\(pid)/cmdline") else { return false }
        let arguments = text.split(separator: "\0", omittingEmptySubsequences: false).map(String.init)
        return Invocation(arguments)?.files == files
    }

    /// The waits before each new try of a start that failed for a reason
    /// that passes (a program still open for writing: `ETXTBSY`; no file
    /// descriptor left: `EMFILE`, `ENFILE`), as the daemon waits to start a monitor.
    package static let retryMilliseconds: [UInt32] = [10, 20, 50, 100, 200, 500, 1_000, 2_000]
}
