import CBenchFutex
import Synchronization

/// A copy of the promise lock (Sources/Promise/Core/FutexLock.swift, whose
/// type the library keeps internal), so that the contention benchmark runs
/// it with the same critical section as the other locks. Keep it the same as
/// the original: the `contention.lock.promiseName` row measures the original
/// itself, through `Promise.name`.
struct FutexLockCopy: ~Copyable, Sendable {
    let word = Atomic<UInt32>(FutexLockCopy.unlocked)

    static var unlocked: UInt32 { 0 }
    static var locked: UInt32 { 1 }
    static var lockedWithSleepers: UInt32 { 2 }

    /// How many times a waiter looks at the word before it sleeps: about a
    /// microsecond or two of `pause`s, a few of the library's critical
    /// sections, far below a time slice.
    static var spinsBeforeSleeping: Int { 64 }

    init() {}

    @inline(__always)
    func lock() {
        if word.compareExchange(expected: Self.unlocked, desired: Self.locked, successOrdering: .acquiring,
                                failureOrdering: .relaxed).exchanged {
            return
        }
        lockContended()
    }

    @inline(never)
    func lockContended() {
        for _ in 0..<Self.spinsBeforeSleeping {
            CFutex_spinHint()
            if word.load(ordering: .relaxed) == Self.unlocked,
               word.compareExchange(expected: Self.unlocked, desired: Self.locked, successOrdering: .acquiring,
                                    failureOrdering: .relaxed).exchanged {
                return
            }
        }
        // From here on the word says 2 while this thread waits, so that the
        // holder's unlock wakes it; taking the lock this way leaves 2 behind,
        // which costs at most one needless wake.
        while word.exchange(Self.lockedWithSleepers, ordering: .acquiring) != Self.unlocked {
            CFutex_wait(wordAddress, Self.lockedWithSleepers)
        }
    }

    @inline(__always)
    func unlock() {
        let previous = word.exchange(Self.unlocked, ordering: .releasing)
        assert(previous != Self.unlocked, "unlocking a lock that is not held")
        if previous == Self.lockedWithSleepers { wakeOneSleeper() }
    }

    @inline(never)
    func wakeOneSleeper() {
        CFutex_wakeOne(wordAddress)
    }

    /// Where the word is: the futex calls name it by address. An `Atomic` is
    /// laid out in place and never moved while borrowed, so this is the
    /// address of the word inside the promise (or helper object) itself.
    var wordAddress: UnsafeMutablePointer<UInt32> {
        withUnsafePointer(to: word) { UnsafeMutableRawPointer(mutating: $0).assumingMemoryBound(to: UInt32.self) }
    }
}
