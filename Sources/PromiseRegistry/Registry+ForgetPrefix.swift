/// `forget` with `prefix`: dropping every settled promise under a prefix,
/// such as the last run of a pipeline named `build/…`, so that a script run
/// again may make its ids anew.
///
/// Found as ``Registry/cancelPrefix(_:slice:)`` finds its promises: in creation
/// order, no more than ``forgetPrefixScanAllowance`` looked at and
/// ``forgetPrefixRemovalAllowance`` dropped per call, with a cursor to go on
/// from, so that no call holds the loop for long.
extension Registry {
    /// The most promises one call looks at (as `cancelPrefix`).
    static let forgetPrefixScanAllowance = 10_000
    /// The most promises one call drops: each is a store deletion and the
    /// end of its log and watches, dearer than a look at its id.
    static let forgetPrefixRemovalAllowance = 1_000

    /// `forget` of the promises under `prefix` (non-empty), after the
    /// sequence number `cursor` names: how many it dropped and kept, and where to go on.
    ///
    /// Drops each settled promise looked at whose id starts with `prefix`
    /// (byte for byte) and that no pending promise needs; counts those kept
    /// because they are pending or needed. The latest made go first, so that
    /// a then child that shares its parent's value is dropped before the
    /// parent is looked at. A non-null `cursor` means promises remain to be
    /// looked at: call again with it until it is null.
    package func forgetPrefix(_ prefix: String, after cursor: Int?) -> ForgetPrefixOutcome {
        let start = cursor.map(firstIndex(after:)) ?? 0
        var matched: [RemotePromise] = []
        var end = start
        let (scanEnd, overflow) = start.addingReportingOverflow(Self.forgetPrefixScanAllowance)
        let limit = overflow ? order.count : min(order.count, scanEnd)
        while end < limit, matched.count < Self.forgetPrefixRemovalAllowance {
            let entry = order[end]
            end += 1
            guard !entry.isRemoved, entry.id.utf8.starts(with: prefix.utf8) else { continue }
            matched.append(entry)
        }
        // Named before anything is dropped: dropping may compact `order`.
        let next = end < order.count ? order[end - 1].sequence : nil
        var forgotten = 0
        var keptPending = 0
        var keptNeeded = 0
        for entry in matched.reversed() {
            if entry.isPending {
                keptPending += 1
            } else if entry.dependents > 0 {
                keptNeeded += 1
            } else {
                remove(entry)
                forgotten += 1
            }
        }
        return ForgetPrefixOutcome(forgotten: forgotten, keptPending: keptPending, keptNeeded: keptNeeded, cursor: next)
    }
}
