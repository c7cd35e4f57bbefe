/// The bytes every connection buffers together (unfinished request lines,
/// requests held back, answers not yet written) against one budget,
/// `DaemonLimits.maxBufferedBytes`. A pure value: the owner reports each
/// change and performs the action it gets back.
///
/// Each connection is cut off only at its own limits; hundreds of them each
/// under those limits can still take all of the machine's memory. Past the
/// budget, the connections holding the most go first (``victims(of:)``):
/// they are the ones that do not read or never finish a line, and one pass
/// frees a quarter of the budget, so that a budget hovering at its limit
/// does not scan the connections at every change.
///
/// It also says when enough was freed to be worth giving back to the
/// system (``Action/returnMemory``): glibc keeps freed memory in its heap
/// unless asked, so a daemon that once buffered gigabytes would keep them.
struct BufferBudget {
    enum Action: Equatable {
        case none
        /// The total passed the budget: cut off ``victims(of:)``.
        case cutOffLargest
        /// At least ``returnThreshold`` bytes were freed since memory was last given back.
        case returnMemory
    }

    /// Bytes freed that make giving memory back worth a `malloc_trim`.
    static let returnThreshold = 8 << 20

    let limit: Int
    private(set) var total = 0
    /// The highest total since memory was last given back.
    private var peak = 0

    init(limit: Int) {
        precondition(limit > 0, "the buffer budget must be positive")
        self.limit = limit
    }

    /// What the budget comes down to after a cut-off: three quarters of it.
    var target: Int { limit - limit / 4 }

    /// A connection's buffered bytes changed by `delta`.
    mutating func changed(by delta: Int) -> Action {
        total += delta
        precondition(total >= 0, "more buffered bytes released than were counted")
        if delta > 0 {
            peak = max(peak, total)
            return total > limit ? .cutOffLargest : .none
        }
        if peak - total >= Self.returnThreshold {
            peak = total
            return .returnMemory
        }
        return .none
    }

    /// The connections to cut off, largest first, so that the total comes
    /// down to ``target``: from `sizes`, each connection's id and buffered
    /// bytes. Ties go to the older connection (the smaller id), so the
    /// choice does not depend on the order of `sizes`. Empty when the total
    /// is within the budget.
    func victims(of sizes: [(id: UInt64, bytes: Int)]) -> [UInt64] {
        guard total > limit else { return [] }
        let ordered = sizes.filter { $0.bytes > 0 }.sorted {
            $0.bytes != $1.bytes ? $0.bytes > $1.bytes : $0.id < $1.id
        }
        var remaining = total
        var chosen: [UInt64] = []
        for connection in ordered where remaining > target {
            chosen.append(connection.id)
            remaining -= connection.bytes
        }
        return chosen
    }
}
