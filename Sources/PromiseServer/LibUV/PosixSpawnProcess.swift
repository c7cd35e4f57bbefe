internal import CLibUV
internal import CProcessSpawn
import Glibc

/// A child process started with `posix_spawn` and watched through a pidfd,
/// leading a session and process group of its own, as ``UVProcess`` does.
/// Loop-thread only.
///
/// Hand-written because libuv's `uv_spawn` forks on Linux (1.44), on the
/// loop thread: the kernel copies the daemon's page tables and the daemon
/// then takes copy-on-write faults, so each start costs in proportion to the
/// daemon's memory while every client waits (docs/PERFORMANCE.md). glibc's
/// posix_spawn uses clone(CLONE_VM|CLONE_VFORK): no copy at all. Without
/// libuv's SIGCHLD handling, the exit is seen as the pidfd becoming
/// readable, and the child is then reaped with `waitpid`.
final class PosixSpawnProcess {
    /// Whether this kernel has pidfd_open (Linux 5.3): without it,
    /// ``ChildProcess`` falls back to ``UVProcess``.
    static let isAvailable: Bool = {
        let fd = CProcessSpawn_pidfd_open(getpid())
        guard fd >= 0 else { return false }
        Glibc.close(fd)
        return true
    }()

    let pid: Int32
    private let exitWatch: UVPoll
    private var onExit: ((Int64, Int32) -> Void)?
    private(set) var hasExited = false

    /// Starts `argv[0]` (searched in the PATH of `environment`, as execvp
    /// does under uv_spawn), or `executable` with `argv` when given, with
    /// `stdio` as its fds 0, 1 and 2, in a new session. The caller keeps
    /// `stdio` and closes them after the call.
    ///
    /// - Parameters:
    ///   - environment: `NAME=value` entries, the child's whole environment.
    ///   - onExit: called once, on the loop thread, with the exit status and
    ///     the terminating signal (0 if none).
    /// - Throws: `UVError` named after `uv_spawn`, the function users and
    ///   logs have always seen, when the program cannot be started
    ///   (`ENOENT`, `EACCES`, a missing `cwd`, `EMFILE`, …).
    init(
        loop: UVLoop,
        executable: String? = nil,
        argv: [String],
        environment: [String],
        cwd: String?,
        stdio: (Int32, Int32, Int32),
        onExit: @escaping (Int64, Int32) -> Void
    ) throws(UVError) {
        guard let file = executable ?? argv.first, !file.isEmpty else {
            throw UVError(code: UV_EINVAL.rawValue, function: "uv_spawn")
        }
        let arguments = CStringArray(argv)
        let environmentBlock = CStringArray(environment)
        defer {
            arguments.free()
            environmentBlock.free()
        }
        var pid: pid_t = 0
        let descriptors: [Int32] = [stdio.0, stdio.1, stdio.2]
        let error: Int32 = descriptors.withUnsafeBufferPointer { descriptors in
            withOptionalCString(cwd) { cwd in
                CProcessSpawn_spawn(&pid, file, arguments.pointer, environmentBlock.pointer, cwd,
                                    descriptors.baseAddress)
            }
        }
        if error != 0 {
            throw UVError(code: -error, function: "uv_spawn")
        }
        // The child exists from here on: any failure must stop and reap it.
        let watch: UVPoll
        do {
            let pidfd = CProcessSpawn_pidfd_open(pid)
            try uvCheck(pidfd < 0 ? -CProcessSpawn_errno() : 0, "pidfd_open")
            watch = try UVPoll(loop: loop, fileDescriptor: pidfd)
        } catch {
            throw Self.killAndReap(pid, after: error)
        }
        self.pid = pid
        self.exitWatch = watch
        self.onExit = onExit
        do {
            // Weak: the poll handle must not keep this object alive.
            try watch.startReadable { [weak self] _ in self?.reap() }
        } catch {
            watch.close()
            self.onExit = nil
            throw Self.killAndReap(pid, after: error)
        }
    }

    /// The pidfd is readable: the child has ended (or an error was reported
    /// on it, when reaping tells whether it has).
    private func reap() {
        guard !hasExited else { return }
        var status: Int32 = 0
        var signal: Int32 = 0
        let reaped = CProcessSpawn_reap(pid, 0, &status, &signal)
        if reaped == 0 { return }
        if reaped < 0 {
            // ECHILD: someone else reaped it. How it ended is lost; say it
            // could not run rather than waiting forever.
            status = 127
            signal = 0
        }
        hasExited = true
        exitWatch.close()
        let onExit = self.onExit
        self.onExit = nil
        onExit?(Int64(status), signal)
    }

    /// Stops watching; the exit, if it has not come yet, is no longer reported.
    /// A child still running is left alone (the caller signals its group),
    /// and stays a zombie until the daemon exits, as under uv_spawn once its
    /// handle was closed.
    func close() {
        onExit = nil
        exitWatch.close()
    }

    /// For a child whose exit cannot be watched: SIGKILL its group, then a
    /// blocking wait, short since SIGKILL cannot be caught. Returns `error`
    /// named after `uv_spawn`, as every failure to start is.
    private static func killAndReap(_ pid: Int32, after error: UVError) -> UVError {
        _ = kill(-pid, SIGKILL)
        var status: Int32 = 0
        var signal: Int32 = 0
        _ = CProcessSpawn_reap(pid, 1, &status, &signal)
        return UVError(code: error.code, function: "uv_spawn")
    }
}

@available(*, unavailable)
extension PosixSpawnProcess: Sendable {}
