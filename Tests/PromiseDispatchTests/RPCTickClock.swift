import Synchronization

/// A clock that moves on by one each time it is read: given to a
/// `TurnBudget` of `n` nanoseconds, it lets a slice take `n` steps.
final class RPCTickClock: Sendable {
    private let ticks = Atomic<UInt64>(0)

    func read() -> UInt64 { ticks.add(1, ordering: .relaxed).newValue }
}
