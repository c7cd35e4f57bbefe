import Promise
import PromiseJSON
import PromiseRPC
import PromiseStore

/// `create`, `resolve`, `reject`, `cancel` and `progress`: making and settling
/// promises (docs/PROTOCOL.md, "Methods"). Each answers with the promise's
/// record, which the dispatcher writes (`recordJSON`).
extension Registry {
    /// `create`: `id?`, `name?`, `timeoutMs?`, `lease?`, `ifExists?`, `replace?` → record.
    /// A lease is held by the connection `connectionID`.
    func create(_ params: ParamReader, connectionID: UInt64) throws(RegistryError) -> RemotePromise {
        let requested = try params.optionalPromiseID("id")
        // Most creates name their id and nothing else: the other params are
        // then known to be absent, without looking each of them up.
        let onlyID = params.count == (requested == nil ? 0 : 1)
        let name = onlyID ? nil : try params.string("name")
        let timeout = onlyID ? nil : try params.milliseconds("timeoutMs")
        let lease = onlyID ? false : try params.bool("lease") ?? false
        let ifExists = onlyID ? "error" : try params.choice("ifExists", ["error", "get"]) ?? "error"
        let replace = onlyID ? false : try replaceParam(params, ifExists: ifExists)
        let (id, existing) = try claim(requested, ifExists: ifExists, replace: replace)
        if let existing { return existing }
        try reserve()
        let entry = register(nil, id: id, kind: .created, name: name)
        if let timeout {
            entry.timeoutMilliseconds = timeout
            let (deadline, overflow) = entry.created.addingReportingOverflow(Int64(clamping: timeout))
            entry.deadline = overflow ? .max : deadline
            armTimeout(entry, afterMilliseconds: timeout)
        }
        if lease {
            entry.lease = true
            entry.leaseHolder = connectionID
            sessions[connectionID]?.leases.insert(id)
        }
        return entry
    }

    /// `resolve`: `id`, `value` (null when absent) → record; -32002 when settled.
    /// `idBytes`: the id as bytes, when the caller read it so (in place of
    /// `params`' "id"; see `LentPromiseID`).
    func resolve(_ params: ParamReader, idBytes: UnsafeRawBufferPointer? = nil) throws(RegistryError) -> RemotePromise {
        let entry = try entry(params, idBytes: idBytes)
        guard settle(entry, .success(params["value"] ?? .null)) else { throw alreadySettled(entry) }
        return entry
    }

    /// `reject`: `id`, `reason` (object or string; "rejected" when absent) → record.
    /// The reason's `origin` is this promise, whatever the client wrote there.
    func reject(_ params: ParamReader, idBytes: UnsafeRawBufferPointer? = nil) throws(RegistryError) -> RemotePromise {
        let entry = try entry(params, idBytes: idBytes)
        var rejection = RemoteRejection(message: "rejected")
        if let reason = params["reason"], !reason.isNull {
            rejection = try ParamReader.rejection(reason, param: "reason")
        }
        rejection.origin = entry.id
        guard settle(entry, .failure(rejection)) else { throw alreadySettled(entry) }
        return entry
    }

    /// `cancel`: `id` → record. The core cancels pending descendants, and the
    /// parent when this was its last uncancelled child. A settled promise
    /// answers -32002, and its pending descendants are cancelled.
    func cancel(_ params: ParamReader) throws(RegistryError) -> RemotePromise {
        let entry = try entry(params.promiseID("id"))
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

    /// `progress`: `id`, `progress` (0…1), `message?` → record.
    func progress(_ params: ParamReader) throws(RegistryError) -> RemotePromise {
        let entry = try entry(params.promiseID("id"))
        guard let fraction = try params.double("progress", in: 0...1) else {
            throw .invalidArgument(param: "progress", reason: "missing \"progress\" (a number from 0 to 1)")
        }
        let message = try params.string("message")
        guard entry.isPending else { throw alreadySettled(entry) }
        if let message { entry.progressMessage = message }
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
