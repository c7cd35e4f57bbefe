import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The lock inside every promise: one atomic byte, taken with a single
/// compare-and-swap, all of it inlined into the caller.
///
/// Written by hand because nothing available fits (measured on Swift 6.3.1,
/// Linux): `Synchronization.Mutex` calls into unspecialised generic code in
/// libswiftSynchronization and looked up type metadata on every lock, most
/// of the ~1.3 µs a `then` + `fulfill` took; a pthread or `NSLock` needs an
/// allocation of its own (its address must not move); and `Mutex` is
/// invisible to ThreadSanitizer, while these atomics are seen by it, so the
/// TSan run checks the real lock.
///
/// Every critical section in the library is a few loads and stores with no
/// user code, so waiting is rare and short: a waiter spins briefly, then
/// yields its core so that a preempted holder can finish.
@usableFromInline
struct _SpinLock: ~Copyable, Sendable {
    @usableFromInline
    let held = Atomic<Bool>(false)

    @inlinable
    init() {}

    @inlinable
    func lock() {
        if held.compareExchange(expected: false, desired: true, successOrdering: .acquiring,
                                failureOrdering: .relaxed).exchanged {
            return
        }
        lockContended()
    }

    @usableFromInline
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

    @inlinable
    func unlock() {
        held.store(false, ordering: .releasing)
    }
}

/// A value behind a `_SpinLock`, for the library's helper objects
/// (combinators, retry and iteration state).
@usableFromInline
final class _Locked<State>: @unchecked Sendable {  // `lock` guards `state`.
    @usableFromInline let lock = _SpinLock()
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
