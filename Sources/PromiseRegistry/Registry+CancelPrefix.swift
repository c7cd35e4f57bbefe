import Promise

/// `cancelPrefix`: cancelling every pending promise whose id starts with a
/// prefix, such as a whole pipeline named `build/…`.
///
/// The registry keeps no index by id order, so a prefix is found by looking
/// at promises in creation order, as `list` does; with up to `maxPromises`
/// (a million by default) held, one call looks at no more than
/// ``cancelPrefixScanAllowance`` of them, and cancels them only until its
/// slice of the loop turn is spent, then answers a cursor to go on from, so
/// that no call holds the loop (and every other client) for long.
extension Registry {
    /// The most promises one `cancelPrefix` call looks at. Each costs a
    /// byte comparison of its id (and, for a match, what its cancel does),
    /// so that a batch of 1,000 calls holds the loop about half a second, as
    /// `list`'s bound allows (docs/PERFORMANCE.md); a million promises take
    /// a hundred calls.
    static let cancelPrefixScanAllowance = 10_000

    /// `cancelPrefix`: how many it cancelled, and where to go on.
    ///
    /// Cancels, in creation order, each pending promise looked at whose id
    /// starts with `prefix`, byte for byte (UTF-8, as ``PromiseKey``
    /// compares ids), as `cancel` would: its pending descendants are
    /// cancelled too, and a parent it was the last uncancelled child of.
    /// `cancelled` counts the promises with the prefix that this call found
    /// pending and left cancelled, whether by their own cancel or by one
    /// above them. A non-null `cursor` means promises remain to be looked
    /// at: call again with it until it is null. The cancels stop once a
    /// `slice` of time has passed since the scan (one at least), the cursor
    /// then naming the last promise cancelled by its own cancel.
    ///
    /// ```swift
    /// registry.cancelPrefix(try CancelPrefixCommand(prefix: "build/"))
    /// // CancelPrefixOutcome(cancelled: 21, cursor: nil)
    /// ```
    package func cancelPrefix(_ command: CancelPrefixCommand, slice: TurnBudget = .unbounded) -> CancelPrefixOutcome {
        let prefix = command.prefix
        let start = command.cursor.map(firstIndex(after:)) ?? 0
        let (scanEnd, overflow) = start.addingReportingOverflow(Self.cancelPrefixScanAllowance)
        var end = overflow ? order.count : min(order.count, scanEnd)
        // Found first, cancelled after: a cancel may add to nothing here, but
        // it settles promises further on, which are counted as they end.
        var matched: [(entry: RemotePromise, index: Int)] = []
        for index in start..<end {
            let entry = order[index]
            guard !entry.isRemoved, entry.isPending, entry.id.utf8.starts(with: prefix.utf8) else { continue }
            matched.append((entry, index))
        }
        // The cancels' time counts from here: a scan that spent it would
        // leave each call one cancel, and 100,000 calls of scans.
        var budget = slice
        budget.start()
        for (position, (entry, index)) in matched.enumerated() where entry.isPending {
            promise(of: entry).cancel()
            if position + 1 < matched.count && budget.isSpent {
                // The next call goes on after this one and finds again those
                // past it still pending; those a cancel above them ended are
                // counted now, as they will not be found pending then.
                end = index + 1
                break
            }
        }
        let cancelled = matched.count(where: { (found: (entry: RemotePromise, index: Int)) -> Bool in
            if case .failure(let error)? = found.entry.result { return error is CancellationError }
            return false
        })
        return CancelPrefixOutcome(cancelled: cancelled, cursor: end < order.count ? order[end - 1].sequence : nil)
    }
}
