#ifndef CPROCESSSPAWN_MONITOR_RELAY_H
#define CPROCESSSPAWN_MONITOR_RELAY_H

#include "CProcessSpawn.h"

#include <poll.h>
#include <stddef.h>

/// One output stream of a monitored command (its stdout or its stderr) on
/// its way from the command to the daemon and to the step's file: read from
/// the monitor's end of the command's socket pair, forwarded to the
/// monitor's own fd 1 or 2 (the daemon's) while the daemon reads them, and
/// appended to the file. Private to the monitor (monitor.c).
struct relay_stream {
    /// The monitor's end of the command's socket pair; -1 once at its end.
    int read_fd;
    /// The monitor's own fd 1 or 2; -1 once the daemon stopped reading (EPIPE).
    int forward_fd;
    /// The step's file (PREFIX.out or PREFIX.err); -1 without one.
    int file_fd;
    /// Bytes read and not yet forwarded: while there are any, nothing more
    /// is read, so that a daemon that reads slowly slows the command down
    /// instead of growing this buffer.
    unsigned char buffer[65536];
    size_t pending_start, pending_end;
    /// Bytes of the stream read in all.
    long long total;
    /// Bytes in `file_fd`.
    long long file_bytes;
};

/// Both streams of a command and where its outcome goes.
struct relay {
    struct relay_stream out, err;
    /// PREFIX, or NULL when nothing is written to files.
    const char *prefix;
    /// Bytes of stdout kept; past it the step fails (the command is killed).
    /// The last `limit` bytes of stderr are kept.
    long long limit;
    /// Set once stdout passed `limit`.
    int stdout_truncated;
};

/// Takes the descriptors of `output` over.
void relay_init(struct relay *relay, const CProcessSpawn_monitor_output *output);

/// Fills `fds` (room for 4) with what to wait for; returns how many.
int relay_poll_fds(struct relay *relay, struct pollfd *fds);

/// Acts on what poll said of `fds`. Returns 1 when stdout passed the limit
/// just now (the caller kills the command).
int relay_handle(struct relay *relay, const struct pollfd *fds, int count);

/// Whether anything is left to read or to forward.
int relay_busy(const struct relay *relay);

/// Writes PREFIX.result (via PREFIX.result.tmp and a rename) for a command
/// that ended with wait status `status`, and closes the files.
void relay_finish(struct relay *relay, int status);

#endif
