import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// `create`, `resolve`, `reject`, `cancel` and `progress`: making and settling
/// promises (docs/PROTOCOL.md, "Methods"). Each answers with the promise's
/// record, which the dispatcher writes (`recordJSON`).
extension Registry {
    /// `create` → the new promise, or the existing one for `ifExists: .get`.
    /// A lease is held by the connection `connectionID`.
    package func create(_ command: CreateCommand, connectionID: UInt64) throws(RegistryError) -> RemotePromise {
        let (id, existing) = try claim(command.id, ifExists: command.ifExists, replace: command.replace)
        if let existing { return existing }
        try reserve()
        let entry = register(nil, id: id, kind: .created, name: command.name)
        if let timeout = command.timeoutMilliseconds {
            entry.timeoutMilliseconds = timeout
            let (deadline, overflow) = entry.created.addingReportingOverflow(Int64(clamping: timeout))
            entry.deadline = overflow ? .max : deadline
            armTimeout(entry, afterMilliseconds: timeout)
        }
        if command.lease {
            entry.leaseState.created(by: connectionID)
            sessions[connectionID]?.leases.insert(id)
        }
        return entry
    }

    /// `resolve` → the fulfilled promise; alreadySettled when it was settled.
    package func resolve(_ command: ResolveCommand) throws(RegistryError) -> RemotePromise {
        let entry = try entry(command.promise)
        guard settle(entry, .success(command.value)) else { throw alreadySettled(entry) }
        return entry
    }

    /// `reject` → the rejected promise; alreadySettled when it was settled.
    /// The reason's `origin` is this promise, whatever the client wrote there.
    package func reject(_ command: RejectCommand) throws(RegistryError) -> RemotePromise {
        let entry = try entry(command.promise)
        var rejection = command.reason ?? RemoteRejection(message: "rejected")
        rejection.origin = entry.id
        guard settle(entry, .failure(rejection)) else { throw alreadySettled(entry) }
        return entry
    }

    /// `cancel` of promise `id` → the promise. The core cancels pending
    /// descendants, and the parent when this was its last uncancelled child.
    /// A settled promise is refused (alreadySettled), and its pending
    /// descendants are cancelled.
    package func cancel(id: String) throws(RegistryError) -> RemotePromise {
        let entry = try entry(id)
        guard promise(of: entry).cancel() else {
            // Settled: it keeps its state, and its pending descendants are
            // cancelled all the same (RXPromise's rule, the pinned `cancel`):
            // cancelling the fulfilled root of a pipeline stops what runs under it.
            cancelPendingDescendants(of: entry)
            throw alreadySettled(entry)
        }
        return entry
    }

    /// Cancels the pending `then` descendants of the settled `entry`, each
    /// (and, through the core, everything pending below it) once, going
    /// through settled children to theirs. Found by the registry's links,
    /// not the core's: a settled promise the registry has compacted no
    /// longer has its core promise.
    private func cancelPendingDescendants(of entry: RemotePromise) {
        var settled = [entry]
        while let parent = settled.popLast() {
            for childID in parent.childIDs {
                // A forgotten child's id may name an unrelated promise by now.
                guard let child = entries[childID], child.parentID == parent.id else { continue }
                if child.isPending {
                    promise(of: child).cancel()
                } else {
                    settled.append(child)
                }
            }
        }
    }

    /// `progress` → the promise, its progress the highest reported.
    package func progress(_ command: ProgressCommand) throws(RegistryError) -> RemotePromise {
        let entry = try entry(command.id)
        let fraction = command.fraction
        guard entry.isPending else { throw alreadySettled(entry) }
        if let message = command.message { entry.progressMessage = message }
        // The core keeps the highest fraction reported; storing a lower one
        // would let the record go back at the next restart.
        entry.reportedProgress = max(entry.reportedProgress ?? 0, fraction)
        promise(of: entry).reportProgress(fraction)
        journal?.touch(entry.id)
        return entry
    }

    /// Rejects `entry` with a timeout in `milliseconds` unless it settles first:
    /// with the reason its record shows (code -32005, "timed out after N ms"),
    /// made here so that it names `entry` as its origin wherever it is passed on.
    func armTimeout(_ entry: RemotePromise, afterMilliseconds milliseconds: UInt64) {
        let core = promise(of: entry)
        let rejection = entry.reason(for: PromiseError.timedOut).at(entry.id)
        entry.timeoutTimer = services.schedule(afterMilliseconds: milliseconds) {
            core.reject(rejection)
        }
    }

    /// The refusal of a change to the settled `entry`, with its record now.
    func alreadySettled(_ entry: RemotePromise) -> RegistryError {
        .alreadySettled(id: entry.id, state: entry.state, record: record(entry))
    }
}
