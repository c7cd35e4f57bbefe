import Glibc

/// How long one piece of a long request (a slice of a batch) may run in one
/// loop turn before the loop serves the other clients: a deadline on the
/// monotonic clock, set when the slice starts and read after each step.
///
/// A step is bounded on its own (a `list` page, a record), so a slice runs
/// at most its budget plus one step.
///
/// ```swift
/// var budget = TurnBudget.standard
/// budget.start()
/// while let step = work.next() {
///     step()
///     if budget.isSpent { break }  // the rest goes on in a later turn
/// }
/// ```
package struct TurnBudget {
    /// Five milliseconds: with the step that passes it and the loop's own
    /// work, a turn stays within about ten.
    package static let standard = TurnBudget(nanoseconds: 5_000_000)
    /// Never spent: everything in one turn (unit tests that count exactly
    /// what one line does).
    package static let unbounded = TurnBudget(nanoseconds: .max)

    /// Time one slice may take.
    package let nanoseconds: UInt64
    /// Reads the monotonic clock, in nanoseconds; tests give one of their own.
    package let clock: @Sendable () -> UInt64
    private var deadline: UInt64 = .max

    package init(nanoseconds: UInt64, clock: @escaping @Sendable () -> UInt64 = TurnBudget.monotonicNanoseconds) {
        self.nanoseconds = nanoseconds
        self.clock = clock
    }

    /// A slice starts now.
    package mutating func start() {
        let (end, overflow) = clock().addingReportingOverflow(nanoseconds)
        deadline = overflow ? .max : end
    }

    /// Whether the slice begun by ``start()`` has used its time.
    package var isSpent: Bool { clock() >= deadline }

    /// `CLOCK_MONOTONIC`, which the vDSO reads without a system call.
    package static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
