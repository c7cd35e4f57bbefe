#define _GNU_SOURCE
#include "CProcessSpawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/// posix_spawn of `path`, or of `/bin/sh path args…` when the kernel cannot
/// run it (ENOEXEC: a script without `#!`), as execvp does.
static int spawn_path(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                      const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    int err = posix_spawn(pid, path, actions, attr, argv, envp);
    if (err != ENOEXEC) return err;
    size_t count = 0;
    while (argv[count] != NULL) count++;
    char **shell = calloc(count + 2, sizeof(char *));
    if (shell == NULL) return ENOMEM;
    shell[0] = (char *)"/bin/sh";
    shell[1] = (char *)path;
    for (size_t i = 1; i < count; i++) shell[i + 1] = argv[i];
    shell[count + 1] = NULL;
    err = posix_spawn(pid, "/bin/sh", actions, attr, shell, envp);
    free(shell);
    return err;
}

/// The errors after which execvp tries the next PATH entry.
static int try_next_entry(int err) {
    return err == EACCES || err == ENOENT || err == ESTALE || err == ENOTDIR || err == ENODEV
        || err == ETIMEDOUT;
}

/// 0 when `candidate` may be started; else the error its exec would give,
/// found with stat and faccessat in this process. Each failed posix_spawn
/// costs a whole clone, a failed exec and a wait on the loop thread (a PATH
/// of ten folders with `cc` in the last made every step ten processes);
/// execvp only pays a failed execve per entry. A relative candidate (an empty
/// or relative PATH entry) is left to the child, which has the step's cwd.
static int candidate_error(const char *candidate) {
    if (candidate[0] != '/') return 0;
    struct stat info;
    if (stat(candidate, &info) != 0) return errno;
    if (!S_ISREG(info.st_mode)) return EACCES;
    if (faccessat(AT_FDCWD, candidate, X_OK, AT_EACCESS) != 0) return errno;
    return 0;
}

static int spawn_searching(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    if (strchr(file, '/') != NULL) return spawn_path(pid, file, actions, attr, argv, envp);
    const char *path = NULL;
    for (char *const *entry = envp; entry != NULL && *entry != NULL; entry++) {
        if (strncmp(*entry, "PATH=", 5) == 0) path = *entry + 5;
    }
    if (path == NULL) path = "/bin:/usr/bin";
    size_t fileLength = strlen(file);
    char *candidate = malloc(strlen(path) + fileLength + 2);
    if (candidate == NULL) return ENOMEM;
    int sawEACCES = 0;
    int err = ENOENT;
    for (const char *start = path;;) {
        const char *end = start;
        while (*end != '\0' && *end != ':') end++;
        size_t length = (size_t)(end - start);
        // An empty entry is the current directory, as for execvp.
        if (length > 0) {
            memcpy(candidate, start, length);
            candidate[length] = '/';
            memcpy(candidate + length + 1, file, fileLength + 1);
        } else {
            memcpy(candidate, file, fileLength + 1);
        }
        int found = candidate_error(candidate);
        err = found == 0 ? spawn_path(pid, candidate, actions, attr, argv, envp) : found;
        if (err == EACCES) sawEACCES = 1;
        if (!try_next_entry(err) || *end == '\0') break;
        start = end + 1;
    }
    free(candidate);
    if (err != 0 && sawEACCES && try_next_entry(err)) err = EACCES;
    return err;
}

int CProcessSpawn_spawn_with(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                             const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    if (file == NULL || file[0] == '\0') return ENOENT;
    return spawn_searching(pid, file, actions, attr, argv, envp);
}

int CProcessSpawn_spawn(int *pid, const char *file, char *const argv[], char *const envp[],
                        const char *cwd, const int stdio[3]) {
    if (file == NULL || file[0] == '\0') return ENOENT;
    // A descriptor below 3 would be overwritten by an earlier dup2: lift it.
    int lifted[3] = {-1, -1, -1};
    int source[3];
    int err = 0;
    for (int i = 0; i < 3 && err == 0; i++) {
        source[i] = stdio[i];
        if (stdio[i] < 3) {
            lifted[i] = fcntl(stdio[i], F_DUPFD_CLOEXEC, 3);
            if (lifted[i] < 0) err = errno;
            source[i] = lifted[i];
        }
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int haveActions = 0, haveAttr = 0;
    if (err == 0) {
        err = posix_spawn_file_actions_init(&actions);
        haveActions = err == 0;
    }
    if (err == 0) {
        err = posix_spawnattr_init(&attr);
        haveAttr = err == 0;
    }
    for (int i = 0; i < 3 && err == 0; i++) {
        err = posix_spawn_file_actions_adddup2(&actions, source[i], i);
    }
    if (err == 0 && cwd != NULL) err = posix_spawn_file_actions_addchdir_np(&actions, cwd);
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    if (err == 0) err = posix_spawnattr_setsigdefault(&attr, &all);
    if (err == 0) err = posix_spawnattr_setsigmask(&attr, &none);
    if (err == 0) {
        err = posix_spawnattr_setflags(
            &attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    }
    pid_t child = 0;
    if (err == 0) err = spawn_searching(&child, file, &actions, &attr, argv, envp);
    if (err == 0) *pid = child;
    if (haveAttr) posix_spawnattr_destroy(&attr);
    if (haveActions) posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < 3; i++) {
        if (lifted[i] >= 0) close(lifted[i]);
    }
    return err;
}

int CProcessSpawn_pidfd_open(int pid) {
    return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
}

int CProcessSpawn_reap(int pid, int blocking, int *exitStatus, int *termSignal) {
    int status = 0;
    pid_t got;
    do {
        got = waitpid((pid_t)pid, &status, blocking ? 0 : WNOHANG);
    } while (got < 0 && errno == EINTR);
    if (got < 0) return -1;
    if (got == 0) return 0;
    *exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    *termSignal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return 1;
}

int CProcessSpawn_errno(void) {
    return errno;
}
