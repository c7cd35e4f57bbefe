/// Errors the library itself rejects promises with.
///
/// ```swift
/// do {
///     let value = try promise.wait(timeout: .seconds(5))
/// } catch PromiseError.timedOut {
///     print("still pending after 5 s")
/// }
/// ```
public enum PromiseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A wait or a ``Promise/timeout(_:)`` ran out of time.
    case timedOut
    /// A promise was resolved with itself, directly or through a chain.
    case cycle
    /// `race` or `any` was given no promises, so nothing could ever settle it.
    case emptyInput

    public var description: String {
        switch self {
        case .timedOut: "timed out"
        case .cycle: "promise resolved with itself (cycle)"
        case .emptyInput: "no promises given"
        }
    }
}
