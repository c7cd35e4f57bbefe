/// The lease of one promise, without I/O: who holds it, and what taking
/// it, its holder's closing, a restart and the end of the grace after one
/// do to it. A pure value: the registry feeds it events and performs the
/// action each returns (store the lease flag, track the holder's session,
/// reject the promise); no session, store or timer is touched here.
///
/// ```
/// none ──create lease / take──▶ held(c) ──c closes──▶ reject
///                                 ▲  └──settle──▶ (holder's session lets go)
/// restore ──▶ unclaimed ──take──┘
///                └──grace ends──▶ reject
/// ```
///
/// A lease restored at start-up has no holder: the old daemon's connections
/// are gone. Within the grace (`promised --lease-grace`) any connection may
/// take it back; without a grace it ends at once (docs/DURABILITY.md,
/// "Leases across a restart").
struct LeaseState: Hashable, Sendable {
    enum Holder: Hashable, Sendable {
        /// Not leased.
        case none
        /// Held by connection `id`: its closing rejects the promise while pending.
        case held(UInt64)
        /// Leased, with no holder: restored at start-up, or its holder closed
        /// while the daemon stopped.
        case unclaimed
    }

    /// What a connection's `lease` of the promise does.
    enum TakeAction: Hashable, Sendable {
        /// The caller holds it now; with `storesFlag`, the promise was not
        /// leased before and the flag must be stored.
        case taken(storesFlag: Bool)
        /// The caller held it already: nothing changes.
        case unchanged
        /// Another open connection holds it.
        case refused(holder: UInt64)
        /// The promise is settled: nothing to lease.
        case alreadySettled
    }

    /// What the end of the grace after a restart, or a holder's closing, does.
    enum EndAction: Hashable, Sendable {
        case none
        /// Reject the pending promise: its lease expired.
        case reject
    }

    /// What a restart does to a stored promise.
    enum RestoreAction: Hashable, Sendable {
        case none
        /// Leased: it waits for a holder until the grace ends.
        case awaitHolder
        /// Leased, and there is no grace: reject it now.
        case rejectNow
    }

    private(set) var holder: Holder = .none

    init(holder: Holder = .none) {
        self.holder = holder
    }

    /// Whether the promise was made or taken with a lease (stored, shown in its record).
    var isLeased: Bool { holder != .none }

    /// The connection holding the lease, if any.
    var holderID: UInt64? {
        if case .held(let id) = holder { return id }
        return nil
    }

    /// `create … lease: true` by connection `connection`.
    mutating func created(by connection: UInt64) {
        precondition(holder == .none, "LeaseState: created twice")
        holder = .held(connection)
    }

    /// Connection `connection` takes the lease of a promise that is pending
    /// (or not), while its current holder's connection is open (or not).
    mutating func take(by connection: UInt64, isPending: Bool, holderIsOpen: Bool) -> TakeAction {
        guard isPending else { return .alreadySettled }
        switch holder {
        case .held(let current) where holderIsOpen:
            return current == connection ? .unchanged : .refused(holder: current)
        case .held:
            holder = .held(connection)
            return .taken(storesFlag: false)
        case .unclaimed:
            holder = .held(connection)
            return .taken(storesFlag: false)
        case .none:
            holder = .held(connection)
            return .taken(storesFlag: true)
        }
    }

    /// Connection `connection` closed while the promise was pending. While the
    /// daemon stops, the lease is kept for the restart, which ends it.
    mutating func holderClosed(_ connection: UInt64, daemonStopping: Bool) -> EndAction {
        guard case .held(let current) = holder, current == connection else { return .none }
        if daemonStopping { return .none }
        return .reject
    }

    /// The promise settled: the holder, whose session lets go of the lease.
    func settled() -> UInt64? {
        holderID
    }

    /// The promise is restored at start-up, `leased` as stored, with a grace
    /// of `graceMilliseconds` for a connection to take it back.
    mutating func restored(leased: Bool, graceMilliseconds: UInt64) -> RestoreAction {
        guard leased else {
            holder = .none
            return .none
        }
        holder = .unclaimed
        return graceMilliseconds == 0 ? .rejectNow : .awaitHolder
    }

    /// The grace after the restart ended, the promise pending (or not).
    func graceEnded(isPending: Bool) -> EndAction {
        isPending && holder == .unclaimed ? .reject : .none
    }
}
