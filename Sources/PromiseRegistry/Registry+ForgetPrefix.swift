import PromiseJSON
import PromiseRPC

/// `forget` with `prefix`: dropping every settled promise under a prefix,
/// such as the last run of a pipeline named `build/…`, so that a script run
/// again may make its ids anew.
///
/// Found as ``Registry/cancelPrefix(_:)`` finds its promises: in creation
/// order, no more than ``forgetPrefixScanAllowance`` looked at and
/// ``forgetPrefixRemovalAllowance`` dropped per call, with a cursor to go on
/// from, so that no call holds the loop for long.
extension Registry {
    /// The most promises one call looks at (as `cancelPrefix`).
    static let forgetPrefixScanAllowance = 10_000
    /// The most promises one call drops: each is a store deletion and the
    /// end of its log and watches, dearer than a look at its id.
    static let forgetPrefixRemovalAllowance = 1_000

    /// `forget` with `prefix` (non-empty), `cursor?` →
    /// `{"forgotten":n,"keptPending":n,"keptNeeded":n,"cursor":string|null}`.
    ///
    /// Drops each settled promise looked at whose id starts with `prefix`
    /// (byte for byte) and that no pending promise needs; counts those kept
    /// because they are pending or needed. The latest made go first, so that
    /// a then child that shares its parent's value is dropped before the
    /// parent is looked at. A non-null `cursor` means promises remain to be
    /// looked at: call again with it until it is null.
    func forgetPrefix(_ params: ParamReader, prefix: String) throws(RegistryError) -> JSONValue {
        guard !prefix.isEmpty else {
            throw .invalidArgument(
                param: "prefix", reason: "\"prefix\" must not be empty: it would forget every settled promise")
        }
        let start = try prefixScanStart(params, method: "forget")
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
        let cursor: JSONValue = end < order.count ? .string(String(order[end - 1].sequence)) : .null
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
        return ["forgotten": .int(forgotten), "keptPending": .int(keptPending), "keptNeeded": .int(keptNeeded), "cursor": cursor]
    }
}
