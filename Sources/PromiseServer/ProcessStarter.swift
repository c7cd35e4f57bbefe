/// How ``ChildProcess`` starts a `then … exec` command.
///
/// ```swift
/// let child = try ChildProcess(loop: loop, spec: spec, environment: environment,
///                              starter: .preferred, onExit: { _ in }, onFinished: { _ in })
/// ```
enum ProcessStarter: Sendable {
    /// `posix_spawn`, the exit watched through a pidfd (``PosixSpawnProcess``):
    /// no fork, so the cost does not grow with the daemon's memory.
    case posixSpawn
    /// libuv's `uv_spawn` (``UVProcess``), which forks: for kernels without
    /// pidfd_open (before Linux 5.3).
    case uvSpawn

    /// `posixSpawn` where the kernel has pidfd_open, else `uvSpawn`.
    static var preferred: ProcessStarter {
        PosixSpawnProcess.isAvailable ? .posixSpawn : .uvSpawn
    }
}
