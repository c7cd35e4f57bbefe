/// What `Promise.all(_:policy:)` does with rejections (OAPromise's join
/// policies; the fourth, "replace errors with nil", is
/// `Promise.allReplacingErrorsWithNil(_:)` because its values are optional).
///
/// ```swift
/// let sizes = Promise.all(downloads, policy: .ignoreErrors)   // only what arrived
/// ```
public enum JoinPolicy: Sendable, Hashable {
    /// Reject as soon as one input rejects, with its error.
    case failFast
    /// Wait for every input; if any rejected, reject with an
    /// ``AggregateError`` listing every failure.
    case allErrors
    /// Wait for every input; fulfil with the fulfilled values, in input
    /// order, leaving the rejected ones out.
    case ignoreErrors
}
