// Counts the heap allocations of the process it is preloaded into, for
// ConnectionBench's allocations per round trip:
//
//   cc -shared -fPIC -O2 -o malloc_counter.so malloc_counter.c
//   LD_PRELOAD=$PWD/malloc_counter.so ConnectionBench --socket SOCKET
//
// malloc, calloc and realloc add one to a counter and call glibc's own
// (`__libc_…`, so no dlsym, which may allocate itself). ConnectionBench
// finds `malloc_counter_read` with dlsym and reports nothing without it.
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);

static _Atomic unsigned long long malloc_counter_total;

/// The allocations counted so far.
unsigned long long malloc_counter_read(void) {
    return atomic_load_explicit(&malloc_counter_total, memory_order_relaxed);
}

void *malloc(size_t size) {
    atomic_fetch_add_explicit(&malloc_counter_total, 1, memory_order_relaxed);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    atomic_fetch_add_explicit(&malloc_counter_total, 1, memory_order_relaxed);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    atomic_fetch_add_explicit(&malloc_counter_total, 1, memory_order_relaxed);
    return __libc_realloc(pointer, size);
}
