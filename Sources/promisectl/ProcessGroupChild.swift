import CLinuxProcess
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A command started by `promisectl run` in a process group of its own, with
/// its stdout and stderr on pipes that `run` reads.
///
/// Spawned with `posix_spawnp` rather than Foundation's `Process`: `Process`
/// cannot start the child in a new process group, and signalling the whole
/// group is what stops a shell pipeline's grandchildren on cancel.
final class ProcessGroupChild {
    /// How the command ended.
    enum Termination: Equatable {
        case exited(Int32)
        case signalled(Int32)

        /// The status a shell would report: the exit status, or 128 + signal.
        var shellStatus: Int32 {
            switch self {
            case .exited(let status): return status
            case .signalled(let signal): return 128 + signal
            }
        }
    }

    let pid: pid_t
    /// Read ends of the command's stdout and stderr; -1 once closed.
    private(set) var standardOutput: Int32
    private(set) var standardError: Int32
    private(set) var termination: Termination?
    /// A pidfd that becomes readable when the command exits, so that a poll
    /// wakes at its end; -1 once reaped, or where `pidfd_open` is missing
    /// (Linux < 5.3, some seccomp filters): then only a poll timeout notices
    /// the end. A pipe's end of input is no substitute: the command can close
    /// its output, or hand it to a background process, long before it exits.
    private(set) var exitDescriptor: Int32 = -1

    /// Starts `arguments[0]` (searched in PATH) with `arguments`, inheriting
    /// stdin and the environment. The signals in `defaultSignals` are reset to
    /// their default action and none is blocked in the child.
    init(arguments: [String], defaultSignals: [Int32]) throws {
        precondition(!arguments.isEmpty)
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard pipe(&outPipe) == 0 else { throw SpawnError(command: arguments[0], errno: errno) }
        guard pipe(&errPipe) == 0 else {
            let err = errno
            close(outPipe[0]); close(outPipe[1])
            throw SpawnError(command: arguments[0], errno: err)
        }
        // Our ends must not leak into the command (it would never see end of input).
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in defaultSignals { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var childPID: pid_t = 0
        let rc = posix_spawnp(&childPID, arguments[0], &actions, &attributes, argv, environ)
        close(outPipe[1])
        close(errPipe[1])
        guard rc == 0 else {
            close(outPipe[0]); close(errPipe[0])
            throw SpawnError(command: arguments[0], errno: rc)
        }
        pid = childPID
        standardOutput = outPipe[0]
        standardError = errPipe[0]
        // Not reaped yet, so the pid is still ours even if the command has already
        // exited. A pidfd is close-on-exec from the start.
        exitDescriptor = CLinuxProcess_pidfd_open(childPID)
    }

    deinit {
        closeStandardOutput()
        closeStandardError()
        closeExitDescriptor()
    }

    func closeStandardOutput() {
        if standardOutput >= 0 { close(standardOutput); standardOutput = -1 }
    }

    func closeStandardError() {
        if standardError >= 0 { close(standardError); standardError = -1 }
    }

    private func closeExitDescriptor() {
        if exitDescriptor >= 0 { close(exitDescriptor); exitDescriptor = -1 }
    }

    /// Sends `signal` to the command's whole process group.
    func signalGroup(_ signal: Int32) {
        if termination == nil { _ = kill(-pid, signal) }
    }

    /// Collects the exit status if the command has ended, without blocking.
    @discardableResult
    func reapIfExited() -> Termination? {
        if let termination { return termination }
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        guard rc == pid else { return nil }
        closeExitDescriptor()  // readable from now on: it would wake every poll
        let signal = status & 0x7f
        termination = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
        return termination
    }
}

/// The command could not be started (not found, not executable, no resources).
struct SpawnError: Error, CustomStringConvertible {
    var command: String
    var errno: Int32
    var description: String { "cannot run \(command): \(String(cString: strerror(errno)))" }
    /// What a shell exits with for the same failure.
    var shellStatus: Int32 { errno == ENOENT ? 127 : 126 }
}
