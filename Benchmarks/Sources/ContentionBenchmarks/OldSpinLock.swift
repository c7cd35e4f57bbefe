import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The promise lock as it was before it learned to sleep (Sources/Promise/Core/SpinLock.swift
/// until the futex lock replaced it), kept here as the baseline of the contention benchmark:
/// a compare-and-swap, then spinning without a pause hint and, after 64 attempts, a
/// `sched_yield` on every further attempt.
struct OldSpinLock: ~Copyable, Sendable {
    let held = Atomic<Bool>(false)

    @inline(__always)
    func lock() {
        if held.compareExchange(expected: false, desired: true, successOrdering: .acquiring,
                                failureOrdering: .relaxed).exchanged {
            return
        }
        lockContended()
    }

    @inline(never)
    func lockContended() {
        var attempts = 0
        while true {
            if !held.load(ordering: .relaxed),
               held.compareExchange(expected: false, desired: true, successOrdering: .acquiring,
                                    failureOrdering: .relaxed).exchanged {
                return
            }
            attempts += 1
            if attempts > 64 { sched_yield() }
        }
    }

    @inline(__always)
    func unlock() {
        held.store(false, ordering: .releasing)
    }
}
