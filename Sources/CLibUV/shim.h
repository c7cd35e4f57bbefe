#ifndef CLIBUV_SHIM_H
#define CLIBUV_SHIM_H
#include <uv.h>
#include <errno.h>
#include <malloc.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/syscall.h>
#include <unistd.h>

/// The uid of the process at the other end of a connected Unix socket, or a
/// negative errno. Swift cannot import `struct ucred`: glibc declares it only
/// under _GNU_SOURCE, which Swift's Glibc module is not built with.
static inline int CLibUV_peer_uid(int fd, uid_t *uid) {
    struct {
        pid_t pid;
        uid_t uid;
        gid_t gid;
    } credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
        return -errno;
    }
    *uid = credentials.uid;
    return 0;
}

/// `send(2)` and `recv(2)` as the bare system calls. glibc's own wrappers are
/// cancellation points: in a process with more than one thread (the daemon's
/// loop runs on a thread of its own) each call switches the thread to
/// asynchronous cancellation and back: two atomic compare-and-swaps and
/// about 55 instructions a call (12,401 -> 12,292 instructions a
/// create+resolve pair, whose two answers are two sends:
/// `scripts/count-instructions.sh daemon`). The daemon never cancels a
/// thread, so that switch buys nothing. `syscall(2)` itself is not a
/// cancellation point; it sets `errno` as the wrappers do.
static inline ssize_t CLibUV_send(int fd, const void *buffer, size_t length, int flags) {
    return syscall(SYS_sendto, fd, buffer, length, flags, NULL, 0);
}

/// `sendmsg(2)` of `count` buffers, as the bare system call (see above).
/// libuv's `uv_buf_t` on Unix has the layout of `struct iovec`.
static inline ssize_t CLibUV_sendBuffers(int fd, const uv_buf_t *buffers, int count, int flags) {
    struct msghdr message = {0};
    message.msg_iov = (struct iovec *)buffers;
    message.msg_iovlen = (size_t)count;
    return syscall(SYS_sendmsg, fd, &message, flags);
}

static inline ssize_t CLibUV_recv(int fd, void *buffer, size_t length, int flags) {
    return syscall(SYS_recvfrom, fd, buffer, length, flags, NULL, NULL);
}

#endif
