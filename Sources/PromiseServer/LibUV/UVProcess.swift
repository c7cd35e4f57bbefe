internal import CLibUV
import Glibc

/// A child process started with `uv_spawn`, leading a process group of its
/// own (`UV_PROCESS_DETACHED` calls `setsid()` in the child), so that
/// ``signalGroup(_:)`` reaches its children and grandchildren too.
/// Only where the kernel lacks pidfd_open: uv_spawn forks, and
/// ``PosixSpawnProcess`` does not (see there). Loop-thread only.
final class UVProcess: UVHandle {
    /// How the process ended: exit status (0 when signalled) and signal (0 when it exited).
    private var onExit: ((Int64, Int32) -> Void)?
    private(set) var pid: Int32 = 0
    private(set) var hasExited = false

    private init(loop: UVLoop) throws(UVError) {
        // uv_spawn initialises the handle itself, even when it fails.
        try super.init(type: UV_PROCESS, "uv_spawn") { _ in 0 }
    }

    /// Starts `argv[0]` (searched in `PATH`) with the three pipes as its
    /// stdin, stdout and stderr, in a new process group.
    ///
    /// - Parameters:
    ///   - environment: `NAME=value` entries, the child's whole environment.
    ///   - onExit: called once, on the loop thread, with the exit status and
    ///     the terminating signal (0 if none).
    /// - Throws: `UVError` when the program cannot be started (`ENOENT`, `EACCES`, …).
    static func spawn(
        loop: UVLoop,
        argv: [String],
        environment: [String],
        cwd: String?,
        stdin: UVPipe,
        stdout: UVPipe,
        stderr: UVPipe,
        onExit: @escaping (Int64, Int32) -> Void
    ) throws(UVError) -> UVProcess {
        guard let file = argv.first, !file.isEmpty else {
            throw UVError(code: UV_EINVAL.rawValue, function: "uv_spawn")
        }
        let process = try UVProcess(loop: loop)
        process.onExit = onExit

        let arguments = CStringArray(argv)
        let environmentBlock = CStringArray(environment)
        defer {
            arguments.free()
            environmentBlock.free()
        }
        var stdio = [uv_stdio_container_t](repeating: uv_stdio_container_t(), count: 3)
        stdio[0].flags = uv_stdio_flags(rawValue: UV_CREATE_PIPE.rawValue | UV_READABLE_PIPE.rawValue)
        stdio[0].data.stream = stdin.stream
        stdio[1].flags = uv_stdio_flags(rawValue: UV_CREATE_PIPE.rawValue | UV_WRITABLE_PIPE.rawValue)
        stdio[1].data.stream = stdout.stream
        stdio[2].flags = uv_stdio_flags(rawValue: UV_CREATE_PIPE.rawValue | UV_WRITABLE_PIPE.rawValue)
        stdio[2].data.stream = stderr.stream

        let code: Int32 = stdio.withUnsafeMutableBufferPointer { stdio in
            file.withCString { file in
                withOptionalCString(cwd) { cwd in
                    var options = uv_process_options_t()
                    options.exit_cb = { raw, status, signal in
                        guard let process = UVHandle.object(UVProcess.self, from: UnsafeMutableRawPointer(raw))
                        else { return }
                        process.hasExited = true
                        let onExit = process.onExit
                        process.onExit = nil
                        onExit?(status, signal)
                    }
                    options.file = file
                    options.args = arguments.pointer
                    options.env = environmentBlock.pointer
                    options.cwd = cwd
                    options.flags = UV_PROCESS_DETACHED.rawValue
                    options.stdio_count = 3
                    options.stdio = stdio.baseAddress
                    return uv_spawn(loop.raw, UnsafeMutablePointer(OpaquePointer(process.pointer)), &options)
                }
            }
        }
        if code < 0 {
            process.onExit = nil
            process.close()
            throw UVError(code: code, function: "uv_spawn")
        }
        process.pid = uv_process_get_pid(UnsafeMutablePointer(OpaquePointer(process.pointer)))
        return process
    }

    /// Sends `signal` to the whole process group the child leads. Errors
    /// (the group is gone: `ESRCH`) are ignored: there is nothing left to stop.
    func signalGroup(_ signal: Int32) {
        guard pid > 0 else { return }
        _ = kill(-pid, signal)
    }

    override func willClose() {
        onExit = nil
    }
}
