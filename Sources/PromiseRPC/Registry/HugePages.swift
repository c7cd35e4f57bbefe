import Glibc

/// Asks the kernel to back a large, freshly allocated buffer with
/// transparent huge pages (`madvise(MADV_HUGEPAGE)`), before anything is
/// written to it.
///
/// For ``PromiseMap``'s slots. A table of half a million promises is
/// 32 MB, and growing it wrote every slot of the new table at once: 8,192
/// page faults of 4 KB in one request, each a trap into the kernel that
/// costs 2.3-4 µs on the benchmark machine (a virtual machine; measured by
/// touching 400 MB page by page), against 0.5 µs per 4 KB when the memory
/// comes as 2 MB pages. In the pinned benchmark (550,000 create+resolve
/// pairs) the table made a third of the daemon's page faults: 55,300
/// faults in all before, 38,800 with huge pages (`minflt` in
/// /proc/PID/stat at the end of a run). Debian's default (`madvise`) gives
/// huge pages only to memory that asks for them; where they are off
/// (`never`) or none is free, the advice changes nothing.
///
/// ```swift
/// let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 32 << 20, alignment: 16)
/// HugePages.advise(buffer)   // then initialise it
/// ```
enum HugePages {
    /// The size of a transparent huge page on x86-64 (and arm64 with 4 KB pages).
    static let size = 2 << 20

    /// Advises the whole huge pages of `buffer`. Advice only: a kernel
    /// without huge pages refuses it, and the buffer works the same on
    /// small pages.
    static func advise(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let pages = wholePages(in: buffer) else { return }
        _ = madvise(pages.baseAddress, pages.count, MADV_HUGEPAGE)
    }

    /// The part of `buffer` that is whole huge pages, or nil when it is
    /// under two pages long (too small to be worth a system call, and a
    /// buffer that short may hold no whole page at all).
    static func wholePages(in buffer: UnsafeMutableRawBufferPointer) -> UnsafeMutableRawBufferPointer? {
        guard buffer.count >= 2 * size, let base = buffer.baseAddress else { return nil }
        let start = (Int(bitPattern: base) + size - 1) & ~(size - 1)
        let end = (Int(bitPattern: base) + buffer.count) & ~(size - 1)
        assert(end > start, "two pages' length holds at least one whole page")
        return UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(bitPattern: start), count: end - start)
    }
}
