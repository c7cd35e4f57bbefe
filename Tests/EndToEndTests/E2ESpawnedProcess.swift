import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A process started with `posix_spawn`, with an empty signal mask and default
/// signal actions, as a login shell or a service manager would start it.
///
/// Foundation's `Process` passes on the mask of the thread that launches it,
/// and test threads block most signals (SIGCHLD, SIGTERM among them); a daemon
/// started that way would test the test runner, not the daemon.
final class E2ESpawnedProcess {
    let pid: pid_t
    private var status: Int32?

    /// Starts `executable` with `arguments`; stdin from /dev/null, stdout and stderr appended to `logPath`.
    init(_ executable: String, _ arguments: [String], logPath: String, cleanSignals: Bool = true) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if cleanSignals {
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
            var none = sigset_t()
            sigemptyset(&none)
            posix_spawnattr_setsigmask(&attributes, &none)
            var all = sigset_t()
            sigfillset(&all)
            sigdelset(&all, SIGKILL)
            sigdelset(&all, SIGSTOP)
            posix_spawnattr_setsigdefault(&attributes, &all)
        }

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw E2EHarnessError("posix_spawn \(executable) failed: \(rc)") }
        pid = child
    }

    /// Reaps the process if it ended; false while it runs.
    var isRunning: Bool {
        if status != nil { return false }
        var raw: Int32 = 0
        if waitpid(pid, &raw, WNOHANG) == pid {
            status = raw
            return false
        }
        return true
    }

    /// The exit status, or 128 + signal; nil while running.
    var terminationStatus: Int32? {
        guard !isRunning, let status else { return nil }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
