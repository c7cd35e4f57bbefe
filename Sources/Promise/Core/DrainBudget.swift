#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How long settling may run `.inline` handlers on one thread before the
/// rest is handed to an executor, for an event loop that serves many
/// clients from one thread.
///
/// Settling, cancelling or resolving a promise runs its `.inline`
/// descendants' handlers at once, in one loop: a promise with 100,000
/// `then(on: .inline)` children settles all of them before `fulfill`
/// returns. Inside ``withDrainBudget(_:_:)``, a loop that has run longer
/// than the budget stops between two handlers, and the handlers left (and
/// the promises queued behind them) continue on `executor`, in as many
/// further runs of at most the budget each as they need.
///
/// Every handler runs exactly once, and the handlers of one promise run
/// in registration order: a handler registered on a promise whose
/// handlers wait for a later run waits behind them. Between runs, some
/// descendants are settled and others not yet.
///
/// Without a budget, which is the default, everything runs at once, at
/// the speed it runs without this type (docs/PERFORMANCE.md).
///
/// ```swift
/// let budget = DrainBudget(.milliseconds(5), resumingOn: loopExecutor)
/// withDrainBudget(budget) {
///     loop.run()  // each settle on this thread yields after 5 ms
/// }
/// ```
public struct DrainBudget: Sendable {
    @usableFromInline
    let scope: _DrainBudgetScope

    /// A budget of `duration` per run; what is left runs on `executor`,
    /// which must run work later, never on the caller's stack (as
    /// ``InlineExecutor`` does): a serial executor on the same thread, such
    /// as an event loop's.
    public init(_ duration: Duration, resumingOn executor: some Executor) {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds) / 1_000_000_000
        scope = _DrainBudgetScope(nanoseconds: UInt64(nanoseconds), executor: executor)
    }

    /// The budget in force on the calling thread, if any.
    public static var current: DrainBudget? {
        _DrainBudgetScope.current.map { DrainBudget(scope: $0) }
    }

    init(scope: _DrainBudgetScope) {
        self.scope = scope
    }
}

/// Runs `body` with `budget` in force on the calling thread: settling
/// inside it yields to `budget`'s executor once it has run for the budget's
/// duration (see ``DrainBudget``). Nested calls apply the innermost budget;
/// the one before is back when `body` returns.
///
/// - Parameters:
///   - budget: The time one run of handlers may take, and where the rest goes.
///   - body: Code that settles promises on this thread.
/// - Returns: What `body` returns.
@discardableResult
public func withDrainBudget<Result, Failure: Error>(
    _ budget: DrainBudget, _ body: () throws(Failure) -> Result
) throws(Failure) -> Result {
    let key = _DrainBudgetScope.key
    let previous = pthread_getspecific(key)
    let scope = Unmanaged.passRetained(budget.scope)
    pthread_setspecific(key, scope.toOpaque())
    defer {
        pthread_setspecific(key, previous)
        scope.release()
    }
    return try body()
}

/// A ``DrainBudget``'s figures, kept in a thread-specific slot while it is
/// in force. Immutable.
@usableFromInline
final class _DrainBudgetScope: Sendable {
    let nanoseconds: UInt64
    let executor: any Executor

    init(nanoseconds: UInt64, executor: any Executor) {
        self.nanoseconds = nanoseconds
        self.executor = executor
    }

    /// The thread-specific slot, made once per process.
    static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// The scope in force on this thread, if any.
    static var current: _DrainBudgetScope? {
        guard let raw = pthread_getspecific(key) else { return nil }
        return Unmanaged<_DrainBudgetScope>.fromOpaque(raw).takeUnretainedValue()
    }

    /// `CLOCK_MONOTONIC`, which the vDSO reads without a system call.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

extension _Worklist {
    /// `deadline` once the budget has run out.
    @usableFromInline static var spent: UInt64 { 1 }

    /// The slow part of `yields()`: whether the budget in force is spent.
    /// The first check under a budget starts its clock; with no budget,
    /// this drain never yields.
    @usableFromInline
    mutating func _budgetSpent() -> Bool {
        if deadline == Self.spent {
            // Every later step checks, so that each loop on the way out stops.
            steps = 63
            return true
        }
        guard let scope = _DrainBudgetScope.current else { return false }
        let now = _DrainBudgetScope.now()
        if deadline == 0 {
            let (end, overflow) = now.addingReportingOverflow(scope.nanoseconds)
            deadline = overflow ? .max : end
            return false
        }
        guard now >= deadline else { return false }
        deadline = Self.spent
        steps = 63
        return true
    }

    /// Hands what is queued to the budget's executor, where a drain under
    /// the same budget goes on with it; first runs what must end in this
    /// turn (`_endsInThisTurn`), and what that queues in turn. The budget
    /// being spent, the handler lists these reach hand on all but their
    /// first handler at once.
    @usableFromInline
    mutating func _handOff() {
        guard let scope = _DrainBudgetScope.current else {
            // The budget ended inside a handler: go on at once.
            deadline = 0
            return drain()
        }
        var waiting: [any _PendingWork] = []
        while let node = next.take() ?? more.popLast() {
            if node._endsInThisTurn {
                node._runPendingCallbacks(&self)
            } else {
                waiting.append(node)
            }
        }
        guard !waiting.isEmpty else { return }
        // Popped last first, so that the later drain takes them in this order.
        let queued = Resumption(more: waiting.reversed())
        let budget = DrainBudget(scope: scope)
        scope.executor.execute {
            withDrainBudget(budget) {
                var work = _Worklist()
                work.more = queued.more
                work.drain()
            }
        }
    }

    /// What a drain hands over, in the order it runs it.
    struct Resumption: Sendable {
        let more: [any _PendingWork]
    }
}
