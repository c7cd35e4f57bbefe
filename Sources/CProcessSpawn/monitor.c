#define _GNU_SOURCE
#include "CProcessSpawn.h"
#include "monitor_relay.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/// spawn.c's execvp-like search and start, with `actions` and `attr`.
int CProcessSpawn_spawn_with(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                             const posix_spawnattr_t *attr, char *const argv[], char *const envp[]);

/// The signals a monitor takes through a signalfd rather than by their default action.
static void monitor_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGCHLD);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGUSR1);
}

int CProcessSpawn_monitor_prepare(void) {
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return errno;
    sigset_t set;
    monitor_signals(&set);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) return errno;
    // A daemon gone away must not end the monitor: writes to it fail with EPIPE instead.
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

int CProcessSpawn_monitor_start(int *pid, char *const argv[], const CProcessSpawn_monitor_output *output) {
    posix_spawn_file_actions_t actions;
    int err = posix_spawn_file_actions_init(&actions);
    if (err != 0) return err;
    err = posix_spawn_file_actions_adddup2(&actions, output->command_stdout, 1);
    if (err == 0) err = posix_spawn_file_actions_adddup2(&actions, output->command_stderr, 2);
    posix_spawnattr_t attr;
    if (err == 0) err = posix_spawnattr_init(&attr);
    if (err != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return err;
    }
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    err = posix_spawnattr_setsigdefault(&attr, &all);
    if (err == 0) err = posix_spawnattr_setsigmask(&attr, &none);
    if (err == 0) {
        err = posix_spawnattr_setflags(
            &attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    }
    pid_t child = 0;
    if (err == 0) err = CProcessSpawn_spawn_with(&child, argv[0], &actions, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (err == 0) *pid = child;
    return err;
}

static long long now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

struct process_entry {
    pid_t pid;
    pid_t ppid;
    int mine;
};

static int by_pid(const void *a, const void *b) {
    pid_t x = ((const struct process_entry *)a)->pid, y = ((const struct process_entry *)b)->pid;
    return (x > y) - (x < y);
}

/// Sends `signal` to every process below this one, found in /proc by their
/// parents: as the child subreaper of its step, every process the command
/// started stays below it, also once its own parent has gone. Returns how
/// many were signalled.
static size_t signal_descendants(int signal) {
    DIR *dir = opendir("/proc");
    if (dir == NULL) return 0;
    size_t capacity = 512, count = 0;
    struct process_entry *entries = malloc(capacity * sizeof *entries);
    if (entries == NULL) {
        closedir(dir);
        return 0;
    }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        char *end = NULL;
        long pid = strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        char text[512];
        ssize_t length = read(fd, text, sizeof text - 1);
        close(fd);
        if (length <= 0) continue;
        text[length] = '\0';
        // The name, field 2, may hold spaces and parentheses: count from the last ')'.
        char *name_end = strrchr(text, ')');
        char state = 0;
        long ppid = 0;
        if (name_end == NULL || sscanf(name_end + 1, " %c %ld", &state, &ppid) != 2) continue;
        if (count == capacity) {
            struct process_entry *grown = realloc(entries, 2 * capacity * sizeof *entries);
            if (grown == NULL) break;
            entries = grown;
            capacity *= 2;
        }
        entries[count++] = (struct process_entry){(pid_t)pid, (pid_t)ppid, 0};
    }
    closedir(dir);
    // Marked in passes, each looking a parent up by binary search: linear in
    // the processes times the depth of the step's tree.
    qsort(entries, count, sizeof *entries, by_pid);
    pid_t self = getpid();
    size_t signalled = 0;
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < count; i++) {
            if (entries[i].mine) continue;
            int parent_is_mine = entries[i].ppid == self;
            if (!parent_is_mine) {
                struct process_entry key = {entries[i].ppid, 0, 0};
                struct process_entry *parent = bsearch(&key, entries, count, sizeof *entries, by_pid);
                parent_is_mine = parent != NULL && parent->mine;
            }
            if (parent_is_mine) {
                entries[i].mine = 1;
                changed = 1;
                kill(entries[i].pid, signal);
                signalled++;
            }
        }
    }
    free(entries);
    return signalled;
}

/// Reaps every child that has ended; records the command's status.
/// Returns 1 when no child is left.
static int reap(pid_t command, int *command_status, int *command_ended) {
    for (;;) {
        int status = 0;
        pid_t got = waitpid(-1, &status, WNOHANG);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return errno == ECHILD;
        if (got == 0) return 0;
        if (got == command) {
            *command_status = status;
            *command_ended = 1;
        }
    }
}

/// Kills every process below this one and reaps them, in rounds until none is left.
static void kill_everything_below(pid_t command, int *command_status, int *command_ended) {
    for (int round = 0; round < 1000; round++) {
        kill(-command, SIGKILL);
        signal_descendants(SIGKILL);
        if (reap(command, command_status, command_ended)) return;
        struct timespec pause = {0, 2 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/// Ends the monitor as its command ended: the same exit status, or the same signal.
static void exit_like(int status) {
    if (WIFSIGNALED(status)) {
        int signal = WTERMSIG(status);
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        struct sigaction standard;
        memset(&standard, 0, sizeof standard);
        standard.sa_handler = SIG_DFL;
        sigaction(signal, &standard, NULL);
        sigset_t only;
        sigemptyset(&only);
        sigaddset(&only, signal);
        sigprocmask(SIG_UNBLOCK, &only, NULL);
        raise(signal);
        _exit(128 + signal);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

/// Acts on the signals the monitor takes: SIGUSR1 kills everything below
/// at once (returns 1); SIGTERM, SIGINT and SIGHUP are passed on, and the
/// grace starts (`*deadline`).
static int take_signals(int signals, pid_t command, unsigned long long grace_ms, long long *deadline) {
    struct signalfd_siginfo info;
    int kill_all = 0;
    while (read(signals, &info, sizeof info) == (ssize_t)sizeof info) {
        int got = (int)info.ssi_signo;
        if (got == SIGUSR1) kill_all = 1;
        if (got == SIGTERM || got == SIGINT || got == SIGHUP) {
            kill(-command, got);
            kill(-command, SIGCONT);
            signal_descendants(got);
            signal_descendants(SIGCONT);
            if (*deadline < 0) *deadline = now_ms() + (long long)grace_ms;
        }
    }
    return kill_all;
}

/// How long output may still come once the command has ended and all it
/// left has been killed (a descendant that passed its stdout to a process
/// outside the step), and how long a daemon may take to read what is left.
#define DRAIN_MS 2000

void CProcessSpawn_monitor_wait(int command, unsigned long long grace_ms, const CProcessSpawn_monitor_output *output) {
    // Its stdin is the command's; its stdout and stderr lead to the daemon.
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        if (null > 0) close(null);
    }
    // The command's ends: the step's output ends when the command's processes close theirs.
    close(output->command_stdout);
    close(output->command_stderr);
    static struct relay relay;
    relay_init(&relay, output);
    sigset_t set;
    monitor_signals(&set);
    int signals = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    int status = 0, ended = 0;
    long long deadline = -1, drain_deadline = -1;
    for (;;) {
        if (!ended) reap(command, &status, &ended);
        if (ended && drain_deadline < 0) {
            // The command has ended: what it left behind goes with it.
            kill_everything_below(command, &status, &ended);
            drain_deadline = now_ms() + DRAIN_MS;
        }
        long long now = now_ms();
        if (ended && (!relay_busy(&relay) || now >= drain_deadline)) break;
        if (!ended && deadline >= 0 && now >= deadline) {
            kill_everything_below(command, &status, &ended);
            continue;
        }
        long long until = ended ? drain_deadline : deadline;
        int timeout = until < 0 ? -1 : (int)(until - now > 1000 ? 1000 : until - now);
        // Without a signalfd, SIGCHLD is looked for once every 10 ms.
        if (signals < 0 && (timeout < 0 || timeout > 10)) timeout = 10;
        struct pollfd fds[5];
        int count = relay_poll_fds(&relay, fds);
        if (signals >= 0) fds[count++] = (struct pollfd){signals, POLLIN, 0};
        if (poll(fds, (nfds_t)count, timeout) < 0 && errno != EINTR) {
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
            continue;
        }
        int relayed = signals >= 0 ? count - 1 : count;
        int kill_all = relay_handle(&relay, fds, relayed);
        if (signals >= 0 && fds[count - 1].revents != 0) {
            kill_all |= take_signals(signals, command, grace_ms, &deadline);
        }
        if (kill_all && !ended) kill_everything_below(command, &status, &ended);
    }
    if (!ended) status = SIGKILL;
    relay_finish(&relay, status);
    exit_like(status);
}
