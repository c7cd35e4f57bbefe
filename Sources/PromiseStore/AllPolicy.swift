/// What an `all` does with failed inputs: its `policy` (the core's
/// ``Promise/JoinPolicy`` for the first three, and `nulls`).
///
/// ```swift
/// AllPolicy(rawValue: "all-errors")  // .allErrors
/// ```
public enum AllPolicy: String, Sendable, Hashable, CaseIterable {
    /// Rejects with the first failure, at once (the default).
    case failFast = "fail-fast"
    /// Waits for every input; rejects listing every failure.
    case allErrors = "all-errors"
    /// Fulfils with the values of the inputs that fulfilled.
    case ignoreErrors = "ignore-errors"
    /// Fulfils with every input's value, null where it failed.
    case nulls
}
