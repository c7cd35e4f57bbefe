import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// `get`, `list` and `info`: reading the registry.
extension Registry {
    /// The most promises one `list` looks at beyond its `limit`. A filter
    /// that matches little (a prefix nothing has) would otherwise read every
    /// promise held on the loop, for each call: a batch of 1,000 such calls
    /// over 200,000 promises kept every other client waiting 30 s. Past it
    /// the page ends short, even empty, with a cursor to go on from.
    static let listScanAllowance = 1_000

    /// `get` of promise `id` → the promise.
    package func get(id: String) throws(RegistryError) -> RemotePromise {
        try entry(id)
    }

    /// `list` → a page of promises, in creation order. Its cursor is a
    /// position to pass back to get the next page; nil means done.
    /// A call looks at no more than `limit` + ``listScanAllowance`` promises,
    /// so a page may come back short (even empty) with a cursor: only a nil
    /// cursor says that nothing more matches. A page also ends before its
    /// records would pass `maxValueBytes` (it holds at least one), so that a
    /// page of large values is as bounded as one record. The prefix is
    /// compared byte for byte. With `parent`, only that promise's `then`
    /// children are looked at: the ones past `maxRecordChildren`, which its
    /// record leaves out, are read this way. Within a batch, a page also ends
    /// once the batch's `slice` of the loop turn is spent (it holds at least
    /// one record), so that a batch of `list` calls yields the loop between
    /// its pages rather than in the middle of none.
    package func list(_ query: ListQuery, maxBytes: Int? = nil, slice: TurnBudget? = nil) throws(RegistryError) -> ListPage {
        let prefix = query.prefix
        let state = query.state
        let limit = query.limit
        let filter = { (entry: RemotePromise) -> Bool in
            // By bytes: String's hasPrefix compares by canonical equivalence,
            // grapheme by grapheme (9–21 ms a promise for a 600 KB prefix of one grapheme).
            if let prefix, !entry.id.utf8.starts(with: prefix.utf8) { return false }
            if let state, RemotePromise.storedState(of: entry.result) != state { return false }
            return true
        }
        if let parentID = query.parentID {
            // Children are listed by their place among the parent's children.
            let children = try entry(parentID).childIDs
            let start = query.cursor.map { min($0, children.count) + 1 } ?? 0
            return listPage(count: children.count, from: start, limit: limit, maxBytes: maxBytes, slice: slice,
                            filter: filter) { index in
                (self.entries[children[index]], index)
            }
        }
        // Everything else by creation order: the cursor is a sequence number.
        let start = query.cursor.map(firstIndex(after:)) ?? 0
        return listPage(count: order.count, from: start, limit: limit, maxBytes: maxBytes, slice: slice,
                        filter: filter) { index in
            (self.order[index], self.order[index].sequence)
        }
    }

    /// One `list` page over candidates `start..<count`: `candidate(index)`
    /// gives the promise there (nil once dropped) and the position a cursor
    /// names it by; the next page starts after the cursor's position.
    ///
    /// A page holds at most `maxValueBytes` of record text, and at most
    /// `maxBytes` when given (the room left in a batch's answer), but always
    /// one record when there is one: a batch of a thousand `list` calls
    /// makes at most its answer's bound of records, not a thousand full pages.
    /// It ends, too, once `slice` is spent.
    private func listPage(
        count: Int, from start: Int, limit: Int, maxBytes: Int?, slice: TurnBudget?,
        filter: (RemotePromise) -> Bool,
        candidate: (Int) -> (RemotePromise?, Int)
    ) -> ListPage {
        // What the answer adds around the page: its envelope, the cursor.
        let bound = min(limits.maxValueBytes, maxBytes.map { $0 - 128 } ?? .max)
        let (now, maxChildren) = (now(), limits.maxRecordChildren)
        var page: [RemotePromise] = []
        var pageBytes = 0
        var next: Int?
        var index = start
        let scanEnd = start.addingReportingOverflow(limit + Self.listScanAllowance)
        let end = scanEnd.overflow ? count : min(count, scanEnd.partialValue)
        while index < end {
            let (found, position) = candidate(index)
            index += 1
            guard let entry = found, !entry.isRemoved, filter(entry) else { continue }
            // One more match exists: when the page is full, or this record
            // would take it past the bound, another page follows.
            // Its record's text and the comma after it, counted no further than the room left.
            var bytes = 0
            if page.count < limit {
                bytes = 1 + entry.record(now: now, maxChildren: maxChildren)
                    .serializedByteCount(upTo: max(0, bound - pageBytes) + 1)
            }
            guard bytes > 0, page.isEmpty || pageBytes + bytes <= bound else {
                next = position - 1
                break
            }
            pageBytes += bytes
            page.append(entry)
            if let slice, index < end, slice.isSpent {
                next = position
                break
            }
        }
        // Stopped by the allowance, not by a full page: go on after the last one looked at.
        if next == nil && index < count && index == end {
            next = candidate(index - 1).1
        }
        return ListPage(promises: page, cursor: next)
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

    /// `forget` of `ids`: how many it dropped, and the ids it kept.
    /// Drops settled promises so that a long-running daemon stays under
    /// `maxPromises`; pending ones are kept and listed, and so are settled
    /// ones that a pending promise still needs (a `then` parent, a
    /// combinator's input: a restart rebuilds that promise from them);
    /// unknown ids are ignored. A forgotten id may be created again; its
    /// children keep naming it as their parent. By a prefix in place of
    /// ids: ``forgetPrefix(_:after:)``.
    package func forget(ids: [String]) -> ForgetOutcome {
        var forgotten = 0
        var pending: [String] = []
        var needed: [String] = []
        for id in ids {
            guard let entry = entries[id] else { continue }
            if entry.isPending {
                pending.append(id)
            } else if entry.dependents > 0 {
                needed.append(id)
            } else {
                remove(entry)
                forgotten += 1
            }
        }
        return ForgetOutcome(forgotten: forgotten, pending: pending, needed: needed)
    }

    /// Drops the settled `entry` from memory and from the store.
    func remove(_ entry: RemotePromise) {
        assert(entry.dependents == 0, "\(entry.id) is removed while a pending promise needs it")
        // Its observer may not have run yet (it hops onto the loop): act on it now.
        didSettle(entry)
        if entry.sharesParentValue, let parentID = entry.parentID { entries[parentID]?.addDependents(-1) }
        if entry.sharesInputValues { holdInputs(of: entry, by: -1) }
        if !logBook.isEmpty { dropLog(entry) }
        entries[entry.id] = nil
        entry.isRemoved = true
        settledCount -= 1
        journal?.remove(StoreDeletion(id: entry.id, sequence: entry.sequence))
        if order.count > 64 && entries.count < order.count / 2 {
            order.removeAll(where: \.isRemoved)
        }
    }

    /// `info`: the registry's counts, pools, limits and store.
    package func info(connections: Int) -> RegistryInfo {
        RegistryInfo(
            promises: entries.count, pending: entries.count - settledCount, settled: settledCount,
            collected: collectedCount, connections: connections, runningProcesses: runningProcesses,
            pools: pools.uses, limits: limits,
            store: journal.map { journal in
                StoreInfo(
                    location: journal.store.location, failure: journal.failure?.message,
                    commits: journal.commitCount, changes: journal.changeCount,
                    unstorable: journal.unstorableCount, quarantined: journal.quarantinedCount)
            },
            retainMilliseconds: retainMilliseconds)
    }
}
