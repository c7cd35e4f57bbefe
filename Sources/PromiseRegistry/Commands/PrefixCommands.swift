/// `cancelPrefix`: cancels the pending promises whose id starts with
/// `prefix`, a bounded scan at a time (Registry+CancelPrefix.swift).
package struct CancelPrefixCommand {
    package var prefix: String
    /// Where the scan starts: after the sequence number an earlier call's cursor names.
    package var cursor: Int?

    /// Refuses an empty prefix, which would cancel every pending promise.
    package init(prefix: String, cursor: Int? = nil) throws(RegistryError) {
        guard !prefix.isEmpty else {
            throw .invalidArgument(
                param: "prefix", reason: "\"prefix\" must not be empty: it would cancel every pending promise")
        }
        self.prefix = prefix
        self.cursor = cursor
    }
}

/// `forget`: drops settled promises, named one by one or by a prefix of their ids.
package enum ForgetCommand {
    /// These ids (unknown ones are ignored).
    case ids([String])
    /// Those whose id starts with `prefix`, a bounded scan at a time, after
    /// the sequence number `cursor` names (Registry+ForgetPrefix.swift).
    case prefix(String, cursor: Int?)

    /// Refuses an empty prefix, which would forget every settled promise.
    package static func prefix(_ prefix: String, after cursor: Int?) throws(RegistryError) -> Self {
        guard !prefix.isEmpty else {
            throw .invalidArgument(
                param: "prefix", reason: "\"prefix\" must not be empty: it would forget every settled promise")
        }
        return .prefix(prefix, cursor: cursor)
    }
}
