internal import CFutex
import Synchronization

/// The lock inside every promise: one 32-bit atomic word, taken with a
/// single compare-and-swap and released with a single exchange, both
/// inlined into the caller; a waiter spins briefly, then sleeps on the word
/// (a Linux futex) until the holder wakes it.
///
/// Written by hand because nothing available fits (Swift 6.3.1, Linux):
/// `Synchronization.Mutex` calls into unspecialised generic code in
/// libswiftSynchronization and looks up type metadata on every lock, which
/// would be most of a `then` + `fulfill` (docs/PERFORMANCE.md); a pthread
/// or `NSLock` needs an allocation of its own (its address must not move);
/// and `Mutex` is invisible to ThreadSanitizer, while these atomics are
/// seen by it, so the TSan run checks the real lock.
///
/// Every critical section in the library is a few loads and stores with no
/// user code, so a waiter first spins a little (with the processor's
/// spin-wait hint): the holder is usually done within that. Past it the
/// holder has most likely been preempted, and spinning on would burn the
/// waiter's time slice (and, with more runnable threads than cores, keep the
/// holder off the core it needs), so the waiter parks in the kernel.
///
/// The word follows Drepper's "Futexes Are Tricky" (mutex 3): 0 unlocked,
/// 1 locked, 2 locked and perhaps with sleepers. Only a thread that is about
/// to sleep sets 2, and a thread woken from sleep takes the lock with 2 (it
/// cannot know whether others still sleep), so an unlock that finds 1 knows
/// nobody sleeps and makes no system call, and one that finds 2 wakes one
/// sleeper: no wake-up is lost.
///
/// Public, underscored, and not part of the API: only so that the contention
/// benchmark (Benchmarks/Sources/ContentionBenchmarks) measures this lock
/// itself rather than a copy that could drift from it.
public struct _FutexLock: ~Copyable, Sendable {
    @usableFromInline
    let word = Atomic<UInt32>(_FutexLock.unlocked)

    @inlinable static var unlocked: UInt32 { 0 }
    @inlinable static var locked: UInt32 { 1 }
    @inlinable static var lockedWithSleepers: UInt32 { 2 }

    /// How many times a waiter looks at the word before it sleeps: about a
    /// microsecond or two of `pause`s, a few of the library's critical
    /// sections, far below a time slice.
    static var spinsBeforeSleeping: Int { 64 }

    @inlinable
    public init() {}

    @inlinable
    public func lock() {
        if word.compareExchange(expected: Self.unlocked, desired: Self.locked, successOrdering: .acquiring,
                                failureOrdering: .relaxed).exchanged {
            return
        }
        lockContended()
    }

    @usableFromInline
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

    /// The wake comes after the release; the word is still there, since the
    /// unlocking caller holds a reference to the object the lock lives in.
    /// Another thread may have taken the lock in between: the woken sleeper
    /// then finds it held and sleeps again (the word says 2 once more).
    @inlinable
    public func unlock() {
        let previous = word.exchange(Self.unlocked, ordering: .releasing)
        assert(previous != Self.unlocked, "unlocking a lock that is not held")
        if previous == Self.lockedWithSleepers { wakeOneSleeper() }
    }

    @usableFromInline
    func wakeOneSleeper() {
        CFutex_wakeOne(wordAddress)
    }

    /// Where the word is: the futex calls name it by address. An `Atomic` is
    /// laid out in place and never moved while borrowed, so this is the
    /// address of the word inside the promise (or helper object) itself.
    var wordAddress: UnsafeMutablePointer<UInt32> {
        withUnsafePointer(to: word) { UnsafeMutableRawPointer(mutating: $0).assumingMemoryBound(to: UInt32.self) }
    }

    /// True while the lock is held and a waiter has gone, or is about to go,
    /// to sleep on it: for the tests that check that sleepers are woken.
    var hasSleepers: Bool {
        word.load(ordering: .relaxed) == Self.lockedWithSleepers
    }
}

/// A value behind a `_FutexLock`, for the library's helper objects
/// (combinators, retry and iteration state).
@usableFromInline
final class _Locked<State>: @unchecked Sendable {  // `lock` guards `state`.
    @usableFromInline let lock = _FutexLock()
    @usableFromInline @exclusivity(unchecked) var state: State

    @inlinable
    init(_ state: State) {
        self.state = state
    }

    @inlinable
    func withLock<R>(_ body: (inout State) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }
}
