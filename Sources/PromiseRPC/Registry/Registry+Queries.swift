import Promise

/// `get`, `list` and `info`: reading the registry.
extension Registry {
    /// The largest `limit` a `list` takes.
    static let maxListLimit = 10_000
    /// The `limit` of a `list` that gives none.
    static let defaultListLimit = 100
    /// The most promises one `list` looks at beyond its `limit`. A filter
    /// that matches little (a prefix nothing has) would otherwise read every
    /// promise held on the loop, for each call: a batch of 1,000 such calls
    /// over 200,000 promises kept every other client waiting 30 s. Past it
    /// the page ends short, even empty, with a cursor to go on from.
    static let listScanAllowance = 1_000

    /// `get`: `id` → record.
    func get(_ params: RPCParams) throws(RPCError) -> RemotePromise {
        try entry(params.promiseID("id"))
    }

    /// `list`: `state?`, `prefix?`, `limit?`, `cursor?` →
    /// `{"promises":[record…],"cursor":string|null}`, in creation order. The
    /// cursor is opaque; pass it back to get the next page; null means done.
    /// A call looks at no more than `limit` + ``listScanAllowance`` promises,
    /// so a page may come back short (even empty) with a cursor: only a null
    /// cursor says that nothing more matches. A page also ends before its
    /// records would pass `maxValueBytes` (it holds at least one), so that a
    /// page of large values is as bounded as one record. The prefix is
    /// compared byte for byte.
    func list(_ params: RPCParams) throws(RPCError) -> JSONValue {
        let state = try params.choice("state", ["pending", "fulfilled", "rejected", "cancelled"])
        let prefix = try params.string("prefix")
        let limit = try params.int("limit", in: 1...Self.maxListLimit) ?? Self.defaultListLimit
        var start = 0
        if let cursor = try params.string("cursor") {
            guard let last = Int(cursor), last >= 0 else {
                throw RPCParams.invalid("cursor", "\"cursor\" must be a cursor returned by an earlier list")
            }
            start = firstIndex(after: last)
        }
        var page: [JSONValue] = []
        var pageBytes = 0
        var next: JSONValue = .null
        var index = start
        let scanEnd = start.addingReportingOverflow(limit + Self.listScanAllowance)
        let end = scanEnd.overflow ? order.count : min(order.count, scanEnd.partialValue)
        while index < end {
            let entry = order[index]
            index += 1
            guard !entry.isRemoved else { continue }
            // By bytes: String's hasPrefix compares by canonical equivalence,
            // grapheme by grapheme (9–21 ms a promise for a 600 KB prefix of one grapheme).
            if let prefix, !entry.id.utf8.starts(with: prefix.utf8) { continue }
            if let state, entry.state != state { continue }
            // One more match exists: when the page is full, or this record
            // would take it past the bound, another page follows.
            var bytes = 0
            var made: JSONValue?
            if page.count < limit {
                let record = record(entry)
                bytes = record.serializedByteCount(upTo: limits.maxValueBytes - pageBytes + 1) + 1
                if page.isEmpty || pageBytes + bytes <= limits.maxValueBytes { made = record }
            }
            guard let made else {
                next = .string(String(entry.sequence - 1))
                break
            }
            pageBytes += bytes
            page.append(made)
        }
        // Stopped by the allowance, not by a full page: go on after the last one looked at.
        if next == .null && index < order.count && index == end {
            next = .string(String(order[index - 1].sequence))
        }
        return ["promises": .array(page), "cursor": next]
    }

    /// The position in `order` of the first promise created after sequence
    /// number `sequence` (`order` is sorted by sequence).
    func firstIndex(after sequence: Int) -> Int {
        var low = 0
        var high = order.count
        while low < high {
            let middle = (low + high) / 2
            if order[middle].sequence <= sequence { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// `forget`: `ids` → `{"forgotten":n,"pending":[id…],"needed":[id…]}`.
    /// Drops settled promises so that a long-running daemon stays under
    /// `maxPromises`; pending ones are kept and listed, and so are settled
    /// ones that a pending promise still needs (a `then` parent, a
    /// combinator's input: a restart rebuilds that promise from them);
    /// unknown ids are ignored. A forgotten id may be created again; its
    /// children keep naming it as their parent.
    func forget(_ params: RPCParams) throws(RPCError) -> JSONValue {
        let ids = try params.promiseIDs("ids")
        var forgotten = 0
        var pending: [JSONValue] = []
        var needed: [JSONValue] = []
        for id in ids {
            guard let entry = entries[id] else { continue }
            if entry.isPending {
                pending.append(.string(id))
            } else if entry.dependents > 0 {
                needed.append(.string(id))
            } else {
                remove(entry)
                forgotten += 1
            }
        }
        return ["forgotten": .int(forgotten), "pending": .array(pending), "needed": .array(needed)]
    }

    /// Drops the settled `entry` from memory and from the store.
    func remove(_ entry: RemotePromise) {
        assert(entry.dependents == 0, "\(entry.id) is removed while a pending promise needs it")
        // Its observer may not have run yet (it hops onto the loop): act on it now.
        didSettle(entry)
        if entry.sharesParentValue, let parentID = entry.parentID { entries[parentID]?.addDependents(-1) }
        entries[entry.id] = nil
        entry.isRemoved = true
        settledCount -= 1
        journal?.remove(StoreDeletion(id: entry.id, sequence: entry.sequence))
        if order.count > 64 && entries.count < order.count / 2 {
            order.removeAll(where: \.isRemoved)
        }
    }

    /// `info` → `{"version","protocol","promises","pending","settled","collected",
    /// "connections","runningProcesses","limits","store"}`.
    func info(connections: Int) -> JSONValue {
        [
            "version": .string(PromiseProtocol.daemonVersion),
            "protocol": .int(PromiseProtocol.version),
            "promises": .int(entries.count),
            "pending": .int(entries.count - settledCount),
            "settled": .int(settledCount),
            "collected": .int(collectedCount),
            "connections": .int(connections),
            "runningProcesses": .int(runningProcesses),
            "limits": limits.json,
            "store": storeInfo,
        ]
    }

    /// Where promises are kept and whether that works, for `info`.
    private var storeInfo: JSONValue {
        let retain: JSONValue = retainMilliseconds.map { .int(Int($0)) } ?? .null
        guard let journal else { return ["location": "none", "durable": false, "retainMs": retain] }
        return [
            "location": .string(journal.store.location),
            "durable": true,
            "writable": .bool(journal.failure == nil),
            "error": journal.failure.map { .string($0.message) } ?? .null,
            "commits": .int(journal.commitCount),
            "changes": .int(journal.changeCount),
            "unstorable": .int(journal.unstorableCount),
            "quarantined": .int(journal.quarantinedCount),
            "retainMs": retain,
        ]
    }
}
