#ifndef CPROCESSSPAWN_H
#define CPROCESSSPAWN_H

// Plain C types only, and no system header: a header of this module that
// included <signal.h> or <spawn.h> would take their declarations away from
// Swift's Glibc module in every Swift file that sees both.

/// Starts `file` with `argv` and exactly the environment `envp`, without
/// fork (posix_spawn), the way libuv 1.44's uv_spawn started the daemon's
/// commands: a new session (setsid, so the child leads its own process
/// group), `stdio[0..2]` as its fds 0, 1 and 2, `cwd` if not NULL, every
/// signal at its default disposition and an empty signal mask, then execvp's
/// search: a `file` without `/` is looked up in the PATH of `envp` (execvp
/// read it after uv_spawn had set `environ = envp`), "/bin:/usr/bin" without
/// one, EACCES winning over ENOENT, and a file the kernel cannot run
/// (ENOEXEC) is run by /bin/sh.
///
/// Returns 0 and sets `*pid`, or an errno value: ENOENT, EACCES, a `cwd`
/// that is missing (ENOENT) or not a directory (ENOTDIR), EMFILE, …
int CProcessSpawn_spawn(int *pid, const char *file, char *const argv[], char *const envp[],
                        const char *cwd, const int stdio[3]);

/// A descriptor that becomes readable when process `pid` exits (Linux >= 5.3),
/// or -1 with errno set (ENOSYS on older kernels, EPERM under some seccomp
/// filters). Swift cannot call the variadic `syscall(2)`.
int CProcessSpawn_pidfd_open(int pid);

/// Reaps `pid` if it has ended (waits for it if `blocking`). Returns 1 and
/// sets `*exitStatus`/`*termSignal` as libuv's exit callback got them
/// (status 0 when signalled, signal 0 when it exited), 0 while it still
/// runs, or -1 with errno set.
int CProcessSpawn_reap(int pid, int blocking, int *exitStatus, int *termSignal);

/// For a step's monitor (`promised --step-monitor`, StepMonitor.swift):
/// makes this process the child subreaper of everything it starts, so that
/// every process the command starts stays below it even once its parent has
/// gone, blocks the signals the monitor takes in
/// ``CProcessSpawn_monitor_wait``, and ignores SIGPIPE (a daemon gone away
/// must not end it). Returns 0 or an errno value.
int CProcessSpawn_monitor_prepare(void);

/// The output of a monitored command: the command's stdout and stderr are
/// socket pairs whose other ends the monitor reads; it forwards what it
/// reads to its own fds 1 and 2 (the daemon's) for as long as the daemon
/// reads them, and, with a `prefix`, keeps it in PREFIX.out (the first
/// `limit` bytes of stdout) and PREFIX.err (the end of stderr, at least its
/// last `limit` bytes), and writes PREFIX.result once the command has ended.
/// Fields are descriptors, -1 when absent.
typedef struct CProcessSpawn_monitor_output {
    /// The command's ends: its fds 1 and 2.
    int command_stdout;
    int command_stderr;
    /// The monitor's ends.
    int stdout_read;
    int stderr_read;
    /// PREFIX.out and PREFIX.err.
    int stdout_file;
    int stderr_file;
    long long limit;
    /// NULL when the files could not be made (or none were asked for).
    const char *prefix;
} CProcessSpawn_monitor_output;

/// Makes the socket pairs of `output` and, when `prefix` is not NULL, its
/// files (mode 0600, made afresh with O_EXCL and O_NOFOLLOW); files that
/// cannot be made leave `output->prefix` NULL and the step without them.
/// `prefix` must outlive the monitor. Returns 0 or an errno value.
int CProcessSpawn_monitor_open_output(CProcessSpawn_monitor_output *output, const char *prefix, long long limit);

/// Starts the command `argv` for a monitor: searched as ``CProcessSpawn_spawn``
/// does, in the PATH of this process's environment (the step's), leading a
/// new session, with this process's fd 0 and the command ends of `output`
/// as its fds 1 and 2, every signal at its default and none blocked.
/// Returns 0 and sets `*pid`, or an errno value.
int CProcessSpawn_monitor_start(int *pid, char *const argv[], const CProcessSpawn_monitor_output *output);

/// The monitor's life once its command runs; never returns. It relays the
/// command's output (see ``CProcessSpawn_monitor_output``) and reaps every
/// process below it; SIGTERM, SIGINT or SIGHUP is passed on to the
/// command's process group and to every process below the monitor (which
/// also gets SIGCONT), and `grace_ms` later everything below is killed;
/// SIGUSR1, or stdout passing the limit, kills everything below at once.
/// When the command has ended, everything it left below the monitor is
/// killed, the output is read to its end (for 2 s at most), PREFIX.result
/// is written, and the monitor ends as the command did: the same exit
/// status, or the same signal.
void CProcessSpawn_monitor_wait(int command, unsigned long long grace_ms, const CProcessSpawn_monitor_output *output);

/// errno, for Swift right after a call above.
int CProcessSpawn_errno(void);

#endif
