internal import CLibUV

/// Gives the heap's free memory back to the system.
///
/// glibc's `free` returns memory to the system only from the top of the
/// heap, and only past `M_TRIM_THRESHOLD`; buffers of hundreds of clients
/// freed in any order leave the heap as large as it ever was, and a daemon
/// that once buffered gigabytes would keep them resident for its whole
/// life. `malloc_trim(0)` releases every free page in the heap
/// (`madvise(MADV_DONTNEED)` on the free chunks, not only the top).
/// It walks the heap, so callers call it rarely (``ConnectionMemory``).
enum HeapTrim {
    /// Trims, and returns how long it took.
    static func returnFreeMemory() -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        _ = malloc_trim(0)
        return clock.now - start
    }
}
