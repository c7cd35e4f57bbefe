/// What one `cancelPrefix` call did.
struct CancelPrefixOutcome: Hashable {
    /// The promises with the prefix that the call found pending and left cancelled.
    var cancelled: Int
    /// The sequence number to go on after; nil: nothing more to look at.
    var cursor: Int?
}

/// What one `forget` of named ids did.
struct ForgetOutcome: Hashable {
    var forgotten: Int
    /// The ids kept because they are pending.
    var pending: [String]
    /// The ids kept because a pending promise needs them.
    var needed: [String]
}

/// What one `forget` by prefix did.
struct ForgetPrefixOutcome: Hashable {
    var forgotten: Int
    /// Promises with the prefix kept because they are pending.
    var keptPending: Int
    /// Promises with the prefix kept because a pending promise needs them.
    var keptNeeded: Int
    /// The sequence number to go on after; nil: nothing more to look at.
    var cursor: Int?
}
