#ifndef CLIBUV_SHIM_H
#define CLIBUV_SHIM_H
#include <uv.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>

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

#endif
