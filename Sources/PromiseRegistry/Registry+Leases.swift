import Logging
import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// Leases that outlive a restart of the daemon (docs/DURABILITY.md, "Leases
/// across a restart"): the `lease` method, which lets a connection take the
/// lease of a pending promise, and the grace after a restart during which
/// the leases of the old daemon's connections wait to be taken back.
extension Registry {
    /// `lease` of promise `id` → the promise. Makes the calling connection the holder of
    /// the pending promise `id`: it is rejected when that connection closes
    /// while it is pending, as if it had been made with `create … lease: true`.
    /// Taking a lease already held by the caller changes nothing; a lease held
    /// by another open connection is refused (leasedByAnother), and so is a
    /// settled promise (alreadySettled). A lease restored at start-up has no
    /// holder until one takes it, within the grace (``leaseGraceMilliseconds``).
    package func lease(id: String, _ call: RegistryCall) throws(RegistryError) -> RemotePromise {
        let entry = try entry(id)
        var lease = entry.leaseState
        let holderIsOpen = lease.holderID.map { sessions[$0] != nil } ?? false
        switch lease.take(by: call.connectionID, isPending: entry.isPending, holderIsOpen: holderIsOpen) {
        case .alreadySettled:
            throw alreadySettled(entry)
        case .unchanged:
            return entry
        case .refused(let holder):
            throw .leasedByAnother(id: entry.id, holder: holder)
        case .taken(let storesFlag):
            entry.leaseState = lease
            // The flag is stored: a restart must know the promise waits for its holder.
            if storesFlag { journal?.touch(entry.id) }
            sessions[call.connectionID]?.leases.insert(entry.id)
            logger.debug("Lease taken", metadata: ["promise.id": "\(entry.id)", "connection.id": "\(call.connectionID)"])
            return entry
        }
    }

    /// The rejection of a lease that no connection holds once the grace
    /// after a restart has passed (or at once, without a grace).
    func restartedLeaseExpired() -> RemoteRejection {
        guard leaseGraceMilliseconds > 0 else { return RemoteRejection(message: "lease expired: the daemon restarted") }
        return RemoteRejection(
            message: "lease expired: the daemon restarted",
            data: ["leaseGraceMs": .int(Int(clamping: leaseGraceMilliseconds))])
    }

    /// After ``restore(_:)``: rejects, once the grace has passed, every
    /// restored lease that no connection has taken back.
    func armLeaseGrace() {
        guard leaseGraceMilliseconds > 0, order.contains(where: { Self.graceEnds($0) == .reject }) else { return }
        leaseGraceTimer = services.schedule(afterMilliseconds: leaseGraceMilliseconds) { [weak self] in
            self?.expireUnclaimedLeases()
        }
    }

    /// Rejects the pending leased promises that no connection holds.
    func expireUnclaimedLeases() {
        leaseGraceTimer = nil
        let rejection = restartedLeaseExpired()
        let unclaimed = order.filter { entries[$0.id] === $0 && Self.graceEnds($0) == .reject }
        for entry in unclaimed where settle(entry, .failure(rejection)) {
            logger.info("Lease expired", metadata: ["promise.id": "\(entry.id)", "reason": "not taken back after the restart"])
        }
    }

    /// What the end of the grace after a restart does to `entry`'s lease.
    private static func graceEnds(_ entry: RemotePromise) -> LeaseState.EndAction {
        entry.leaseState.graceEnded(isPending: entry.isPending)
    }
}
