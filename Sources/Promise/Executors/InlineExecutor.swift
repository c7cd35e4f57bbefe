/// Runs work at once, on the thread that settles the promise, or on the
/// thread that calls `then` when the promise is already settled.
///
/// The fastest executor: no thread hop and no allocation. Use it for short,
/// non-blocking handlers. Long chains of `.inline` handlers are run in a loop,
/// not by recursion, so a chain of any length settles without exhausting the
/// stack.
///
/// ```swift
/// let doubled = promise.then(on: .inline) { $0 * 2 }
/// ```
public struct InlineExecutor: Executor {
    @inlinable
    public init() {}

    @inlinable
    public func execute(_ work: @escaping @Sendable () -> Void) {
        work()
    }
}

extension Executor where Self == InlineExecutor {
    /// Runs handlers at once, on the settling (or registering) thread.
    @inlinable
    public static var inline: InlineExecutor { InlineExecutor() }
}
