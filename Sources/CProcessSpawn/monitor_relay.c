#define _GNU_SOURCE
#include "monitor_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/// Bytes a file may hold past twice the limit before it is cut back to
/// its last `limit` bytes: cutting in large steps keeps the copying linear.
#define STDERR_SLACK 65536

/// `prefix` + `suffix` in `path` (room for PATH_MAX); 0 when it does not fit.
static int file_path(char *path, size_t room, const char *prefix, const char *suffix) {
    int length = snprintf(path, room, "%s%s", prefix, suffix);
    return length > 0 && (size_t)length < room;
}

/// Creates PREFIX+suffix afresh: a file left there before is removed, and
/// the new one is made with O_EXCL and O_NOFOLLOW, mode 0600, so that
/// nothing (a link put in its place) makes the monitor write elsewhere.
static int create_file(const char *prefix, const char *suffix) {
    char path[4096];
    if (!file_path(path, sizeof path, prefix, suffix)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    unlink(path);
    return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

int CProcessSpawn_monitor_open_output(CProcessSpawn_monitor_output *output, const char *prefix, long long limit) {
    memset(output, 0, sizeof *output);
    output->command_stdout = output->command_stderr = -1;
    output->stdout_read = output->stderr_read = -1;
    output->stdout_file = output->stderr_file = -1;
    output->limit = limit < 0 ? 0 : limit;
    int out[2], err[2];
    // Socket pairs, as the daemon gives commands: a command sees the same
    // kind of stdout and stderr with a monitor as without.
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) != 0) return errno;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, err) != 0) {
        int saved = errno;
        close(out[0]);
        close(out[1]);
        return saved;
    }
    output->stdout_read = out[0];
    output->command_stdout = out[1];
    output->stderr_read = err[0];
    output->command_stderr = err[1];
    if (prefix != NULL) {
        output->stdout_file = create_file(prefix, ".out");
        output->stderr_file = output->stdout_file < 0 ? -1 : create_file(prefix, ".err");
        if (output->stdout_file >= 0 && output->stderr_file >= 0) {
            output->prefix = prefix;
        } else {
            // Without its files the step is watched as without a store: it
            // runs, and a restart that finds no outcome does not run it again.
            if (output->stdout_file >= 0) close(output->stdout_file);
            output->stdout_file = -1;
        }
    }
    return 0;
}

static void stream_init(struct relay_stream *stream, int read_fd, int forward_fd, int file_fd) {
    stream->read_fd = read_fd;
    stream->forward_fd = forward_fd;
    stream->file_fd = file_fd;
    stream->pending_start = stream->pending_end = 0;
    stream->total = 0;
    stream->file_bytes = 0;
    fcntl(read_fd, F_SETFL, fcntl(read_fd, F_GETFL) | O_NONBLOCK);
    fcntl(forward_fd, F_SETFL, fcntl(forward_fd, F_GETFL) | O_NONBLOCK);
}

void relay_init(struct relay *relay, const CProcessSpawn_monitor_output *output) {
    stream_init(&relay->out, output->stdout_read, 1, output->stdout_file);
    stream_init(&relay->err, output->stderr_read, 2, output->stderr_file);
    relay->prefix = output->prefix;
    relay->limit = output->limit;
    relay->stdout_truncated = 0;
}

/// Writes all of `bytes` to `fd` (a plain file); 0 or -1.
static int write_all(int fd, const unsigned char *bytes, size_t count) {
    while (count > 0) {
        ssize_t written = write(fd, bytes, count);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return -1;
        bytes += written;
        count -= (size_t)written;
    }
    return 0;
}

/// Cuts PREFIX.err back to its last `limit` bytes: they are copied to
/// PREFIX.err.tmp, which then takes its place.
static void compact_stderr(struct relay *relay) {
    struct relay_stream *err = &relay->err;
    int fresh = create_file(relay->prefix, ".err.tmp");
    if (fresh < 0) return;
    long long from = err->file_bytes - relay->limit;
    unsigned char chunk[65536];
    int ok = 1;
    for (long long at = from; at < err->file_bytes && ok;) {
        ssize_t got = pread(err->file_fd, chunk, sizeof chunk, at);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0 || write_all(fresh, chunk, (size_t)got) != 0) ok = 0;
        at += got;
    }
    char temporary[4096], final[4096];
    if (ok && file_path(temporary, sizeof temporary, relay->prefix, ".err.tmp")
        && file_path(final, sizeof final, relay->prefix, ".err") && rename(temporary, final) == 0) {
        close(err->file_fd);
        err->file_fd = fresh;
        err->file_bytes = relay->limit;
        return;
    }
    close(fresh);
    if (file_path(temporary, sizeof temporary, relay->prefix, ".err.tmp")) unlink(temporary);
}

/// Keeps `count` bytes just read: stdout up to the limit, stderr's end.
/// Returns 1 when stdout passed the limit with them.
static int keep(struct relay *relay, struct relay_stream *stream, const unsigned char *bytes, size_t count) {
    long long before = stream->total;
    stream->total += (long long)count;
    if (stream == &relay->out) {
        if (stream->file_fd >= 0 && before < relay->limit) {
            long long room = relay->limit - before;
            size_t kept = (long long)count < room ? count : (size_t)room;
            if (write_all(stream->file_fd, bytes, kept) == 0) stream->file_bytes += (long long)kept;
        }
        if (stream->total > relay->limit && !relay->stdout_truncated) {
            relay->stdout_truncated = 1;
            return 1;
        }
        return 0;
    }
    if (stream->file_fd >= 0 && write_all(stream->file_fd, bytes, count) == 0) {
        stream->file_bytes += (long long)count;
        if (stream->file_bytes > 2 * relay->limit + STDERR_SLACK) compact_stderr(relay);
    }
    return 0;
}

/// Forwards what is pending to the daemon, as much as it takes now. A
/// daemon that has gone (EPIPE, or any other error) is no longer written to.
static void forward(struct relay_stream *stream) {
    while (stream->forward_fd >= 0 && stream->pending_start < stream->pending_end) {
        ssize_t written = write(stream->forward_fd, stream->buffer + stream->pending_start,
                                stream->pending_end - stream->pending_start);
        if (written < 0 && errno == EINTR) continue;
        if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (written <= 0) {
            stream->forward_fd = -1;
            break;
        }
        stream->pending_start += (size_t)written;
    }
    stream->pending_start = stream->pending_end = 0;
}

/// Reads what the command wrote. Returns 1 when stdout passed the limit.
static int read_stream(struct relay *relay, struct relay_stream *stream) {
    for (;;) {
        ssize_t got = read(stream->read_fd, stream->buffer, sizeof stream->buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (got <= 0) {
            close(stream->read_fd);
            stream->read_fd = -1;
            return 0;
        }
        int passed = keep(relay, stream, stream->buffer, (size_t)got);
        if (stream->forward_fd >= 0) {
            stream->pending_start = 0;
            stream->pending_end = (size_t)got;
            forward(stream);
        }
        return passed;
    }
}

static int stream_poll_fds(struct relay_stream *stream, struct pollfd *fds) {
    if (stream->pending_start < stream->pending_end) {
        fds[0] = (struct pollfd){stream->forward_fd, POLLOUT, 0};
        return 1;
    }
    if (stream->read_fd >= 0) {
        fds[0] = (struct pollfd){stream->read_fd, POLLIN, 0};
        return 1;
    }
    return 0;
}

int relay_poll_fds(struct relay *relay, struct pollfd *fds) {
    int count = stream_poll_fds(&relay->out, fds);
    return count + stream_poll_fds(&relay->err, fds + count);
}

int relay_handle(struct relay *relay, const struct pollfd *fds, int count) {
    int passed = 0;
    for (int i = 0; i < count; i++) {
        if (fds[i].revents == 0) continue;
        struct relay_stream *stream = fds[i].fd == relay->out.read_fd || fds[i].fd == relay->out.forward_fd
            ? &relay->out : &relay->err;
        if (fds[i].events & POLLOUT) {
            forward(stream);
        } else {
            passed |= read_stream(relay, stream);
        }
    }
    return passed;
}

int relay_busy(const struct relay *relay) {
    return relay->out.read_fd >= 0 || relay->err.read_fd >= 0
        || relay->out.pending_start < relay->out.pending_end || relay->err.pending_start < relay->err.pending_end;
}

void relay_finish(struct relay *relay, int status) {
    if (relay->prefix == NULL) return;
    int exit_status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WIFEXITED(status) ? WEXITSTATUS(status) : 127;
    int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    int fd = create_file(relay->prefix, ".result.tmp");
    if (fd < 0) return;
    char line[256];
    // The format StepOutputFiles.swift reads: one line of name=value.
    int length = snprintf(line, sizeof line, "promised-step-result 1 status=%d signal=%d stdout=%lld truncated=%d stderr=%lld\n",
                          exit_status, signal, relay->out.file_bytes, relay->stdout_truncated, relay->err.total);
    int ok = length > 0 && (size_t)length < sizeof line && write_all(fd, (const unsigned char *)line, (size_t)length) == 0;
    close(fd);
    if (relay->out.file_fd >= 0) close(relay->out.file_fd);
    if (relay->err.file_fd >= 0) close(relay->err.file_fd);
    char temporary[4096], final[4096];
    if (!file_path(temporary, sizeof temporary, relay->prefix, ".result.tmp")) return;
    if (ok && file_path(final, sizeof final, relay->prefix, ".result") && rename(temporary, final) == 0) return;
    unlink(temporary);
}
