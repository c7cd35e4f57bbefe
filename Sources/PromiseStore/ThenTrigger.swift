/// Which settlement of its parent runs a `then` child: the `on` of the
/// `then` method, the record and the stored promise.
public enum ThenTrigger: String, Sendable, Hashable, CaseIterable {
    /// The parent fulfilled: the child gets its value (the default).
    case fulfilled
    /// The parent rejected or was cancelled: the child gets its reason.
    case rejected
    /// Either: the child gets `{"state":…,"value"|"reason":…}`.
    case settled
}
