/// What one `cancelPrefix` call did.
package struct CancelPrefixOutcome: Hashable {
    /// The promises with the prefix that the call found pending and left cancelled.
    package var cancelled: Int
    /// The sequence number to go on after; nil: nothing more to look at.
    package var cursor: Int?
}

/// What one `forget` of named ids did.
package struct ForgetOutcome: Hashable {
    package var forgotten: Int
    /// The ids kept because they are pending.
    package var pending: [String]
    /// The ids kept because a pending promise needs them.
    package var needed: [String]
}

/// What one `forget` by prefix did.
package struct ForgetPrefixOutcome: Hashable {
    package var forgotten: Int
    /// Promises with the prefix kept because they are pending.
    package var keptPending: Int
    /// Promises with the prefix kept because a pending promise needs them.
    package var keptNeeded: Int
    /// The sequence number to go on after; nil: nothing more to look at.
    package var cursor: Int?
}
