internal import CProcessSpawn
import Glibc
import PromiseRegistry

/// Tells once a process that is not the daemon's child has ended: a step's
/// monitor started by a daemon that has since been restarted. A pidfd
/// (Linux 5.3) becomes readable when its process exits, whoever its
/// parent is; its exit status is not the watcher's to collect (the monitor
/// writes its command's outcome to a file, ``StepOutputFiles``).
/// Loop-thread only.
final class ProcessExitWatch: ScheduledTimer {
    private let poll: UVPoll
    private var onExit: (() -> Void)?

    /// Watches process `pid`.
    ///
    /// - Throws: `UVError` from `pidfd_open`: `ESRCH` when there is no such
    ///   process any more, `ENOSYS` on a kernel without pidfds.
    init(loop: UVLoop, pid: Int32, onExit: @escaping () -> Void) throws(UVError) {
        let descriptor = CProcessSpawn_pidfd_open(pid)
        try uvCheck(descriptor < 0 ? -CProcessSpawn_errno() : 0, "pidfd_open")
        poll = try UVPoll(loop: loop, fileDescriptor: descriptor)
        self.onExit = onExit
        do {
            // Weak: the poll handle must not keep this object alive.
            try poll.startReadable { [weak self] _ in self?.exited() }
        } catch {
            poll.close()
            throw error
        }
    }

    private func exited() {
        guard let onExit else { return }
        self.onExit = nil
        poll.close()
        onExit()
    }

    /// Stops watching: `onExit` is not called.
    func cancel() {
        onExit = nil
        poll.close()
    }
}

@available(*, unavailable)
extension ProcessExitWatch: Sendable {}
