import Promise

/// `get`, `list` and `info`: reading the registry.
extension Registry {
    /// The largest `limit` a `list` takes.
    static let maxListLimit = 10_000
    /// The `limit` of a `list` that gives none.
    static let defaultListLimit = 100

    /// `get`: `id` → record.
    func get(_ params: RPCParams) throws(RPCError) -> RemotePromise {
        try entry(params.promiseID("id"))
    }

    /// `list`: `state?`, `prefix?`, `limit?`, `cursor?` →
    /// `{"promises":[record…],"cursor":string|null}`, in creation order. The
    /// cursor is opaque; pass it back to get the next page; null means done.
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
        var next: JSONValue = .null
        var index = start
        while index < order.count {
            let entry = order[index]
            index += 1
            guard entries[entry.id] === entry else { continue }
            if let prefix, !entry.id.hasPrefix(prefix) { continue }
            if let state, entry.state != state { continue }
            if page.count == limit {
                // One more match exists: the page is full and another follows.
                next = .string(String(order[index - 1].sequence - 1))
                break
            }
            page.append(record(entry))
        }
        return ["promises": .array(page), "cursor": next]
    }

    /// The position in `order` of the first promise created after sequence
    /// number `sequence` (`order` is sorted by sequence).
    private func firstIndex(after sequence: Int) -> Int {
        var low = 0
        var high = order.count
        while low < high {
            let middle = (low + high) / 2
            if order[middle].sequence <= sequence { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// `forget`: `ids` → `{"forgotten":n,"pending":[id…]}`. Drops settled
    /// promises so that a long-running daemon stays under `maxPromises`;
    /// pending ones are kept and listed; unknown ids are ignored. A
    /// forgotten id may be created again; its children keep naming it as
    /// their parent.
    func forget(_ params: RPCParams) throws(RPCError) -> JSONValue {
        let ids = try params.promiseIDs("ids")
        var forgotten = 0
        var pending: [JSONValue] = []
        for id in ids {
            guard let entry = entries[id] else { continue }
            guard !entry.isPending else {
                pending.append(.string(id))
                continue
            }
            remove(entry)
            forgotten += 1
        }
        return ["forgotten": .int(forgotten), "pending": .array(pending)]
    }

    /// Drops the settled `entry` from memory and from the store.
    func remove(_ entry: RemotePromise) {
        // Its observer may not have run yet (it hops onto the loop): act on it now.
        didSettle(entry)
        entries[entry.id] = nil
        settledCount -= 1
        journal?.remove(StoreDeletion(id: entry.id, sequence: entry.sequence))
        if order.count > 64 && entries.count < order.count / 2 {
            order.removeAll { entries[$0.id] !== $0 }
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
