#ifndef CFUTEX_FUTEX_H
#define CFUTEX_FUTEX_H
// The two futex calls and the spin-wait hint behind the promise lock
// (Sources/Promise/Core/FutexLock.swift). Hand-written because Swift cannot
// call the variadic syscall(2), glibc has no futex wrapper, and no
// well-kept Swift package offers one (swift-atomics and Synchronization
// give atomics only; Synchronization.Mutex keeps its futex to itself).
// The lock word itself lives in Swift atomics, so that ThreadSanitizer sees
// every acquire and release; these calls only put a thread to sleep and
// wake it, and carry no ordering of their own.
#include <stdint.h>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/// Sleeps while `*word == expected` (FUTEX_WAIT_PRIVATE). Returns at once if
/// the word differs, on a wake, or on a signal: the caller re-checks.
static inline void CFutex_wait(uint32_t *word, uint32_t expected) {
#if defined(__linux__)
    (void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
#else
    (void)word;
    (void)expected;
#endif
}

/// Wakes at most one thread sleeping on `word` (FUTEX_WAKE_PRIVATE).
static inline void CFutex_wakeOne(uint32_t *word) {
#if defined(__linux__)
    (void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    (void)word;
#endif
}

/// Tells the core that this thread is spinning (x86 `pause`, Arm `yield`):
/// it then lends its resources to its hyper-thread sibling and does not flood
/// the memory system with speculative loads of the lock word.
static inline void CFutex_spinHint(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

#endif
