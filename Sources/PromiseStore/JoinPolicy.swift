/// What an `all` does with failed inputs: its `policy`.
///
/// ```swift
/// JoinPolicy(rawValue: "all-errors")  // .allErrors
/// ```
public enum JoinPolicy: String, Sendable, Hashable, CaseIterable {
    /// Rejects with the first failure, at once (the default).
    case failFast = "fail-fast"
    /// Waits for every input; rejects listing every failure.
    case allErrors = "all-errors"
    /// Fulfils with the values of the inputs that fulfilled.
    case ignoreErrors = "ignore-errors"
    /// Fulfils with every input's value, null where it failed.
    case nulls
}
