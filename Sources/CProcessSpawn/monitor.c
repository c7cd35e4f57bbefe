#define _GNU_SOURCE
#include "CProcessSpawn.h"

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
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/// spawn.c's execvp-like search and start, with `attr` and no file actions.
int CProcessSpawn_spawn_with(pid_t *pid, const char *file, const posix_spawnattr_t *attr,
                             char *const argv[], char *const envp[]);

/// The signals a monitor takes with sigtimedwait rather than by their default action.
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
    return 0;
}

int CProcessSpawn_monitor_start(int *pid, char *const argv[]) {
    posix_spawnattr_t attr;
    int err = posix_spawnattr_init(&attr);
    if (err != 0) return err;
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
    if (err == 0) err = CProcessSpawn_spawn_with(&child, argv[0], &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
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

void CProcessSpawn_monitor_wait(int command, unsigned long long grace_ms) {
    // Its stdio is the command's: closed here, so that the step's output ends
    // when the command's processes close theirs.
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        if (null > 2) close(null);
    }
    sigset_t set;
    monitor_signals(&set);
    int status = 0, ended = 0;
    long long deadline = -1;
    for (;;) {
        if (reap(command, &status, &ended) || ended) break;
        siginfo_t info;
        int got;
        if (deadline >= 0) {
            long long left = deadline - now_ms();
            if (left <= 0) {
                kill_everything_below(command, &status, &ended);
                break;
            }
            struct timespec wait = {left / 1000, (left % 1000) * 1000000};
            got = sigtimedwait(&set, &info, &wait);
        } else {
            got = sigwaitinfo(&set, &info);
        }
        if (got == SIGUSR1) {
            kill_everything_below(command, &status, &ended);
            break;
        }
        if (got == SIGTERM || got == SIGINT || got == SIGHUP) {
            kill(-command, got);
            kill(-command, SIGCONT);
            signal_descendants(got);
            signal_descendants(SIGCONT);
            if (deadline < 0) deadline = now_ms() + (long long)grace_ms;
        }
    }
    // The command has ended: what it left behind goes with it.
    kill_everything_below(command, &status, &ended);
    exit_like(ended ? status : (9 & 0x7f));
}
