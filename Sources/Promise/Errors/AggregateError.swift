/// Several failures at once: from `Promise.any` when every input was
/// rejected, and from `Promise.all(_:policy:)` with ``JoinPolicy/allErrors``.
///
/// ```swift
/// Promise.all(uploads, policy: .allErrors).recover { error in
///     let failed = (error as? AggregateError)?.failures.map(\.index) ?? []
///     print("uploads \(failed) failed")
///     return []
/// }
/// ```
public struct AggregateError: Error, Sendable, CustomStringConvertible {
    /// Each failure with the position of its promise in the input, in input order.
    public let failures: [(index: Int, error: any Error)]

    public init(failures: [(index: Int, error: any Error)]) {
        self.failures = failures
    }

    /// The errors alone, in input order.
    public var errors: [any Error] { failures.map(\.error) }

    public var description: String {
        let parts = failures.map { "#\($0.index): \($0.error)" }
        return "\(failures.count) failed: " + parts.joined(separator: "; ")
    }
}
