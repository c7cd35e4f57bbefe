#ifndef CLINUXPROCESS_SHIM_H
#define CLINUXPROCESS_SHIM_H
#include <errno.h>
#include <sys/types.h>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#endif

/// A descriptor that becomes readable when process `pid` exits (Linux >= 5.3),
/// or -1 with errno set (ENOSYS on older kernels, EPERM under some seccomp
/// filters, ESRCH when there is no such process). Swift cannot call the
/// variadic `syscall(2)`, and glibc's `pidfd_open` wrapper (2.36) is not in
/// Swift's Glibc module.
static inline int CLinuxProcess_pidfd_open(pid_t pid) {
#if defined(__linux__)
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

#endif
