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

/// errno, for Swift right after a call above.
int CProcessSpawn_errno(void);

#endif
