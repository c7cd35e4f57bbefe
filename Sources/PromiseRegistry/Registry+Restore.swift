import Logging
import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// Start-up: rebuilding the registry from what a store kept
/// (docs/DURABILITY.md, "Restart").
extension Registry {
    /// What ``restore(_:)`` did, for the start-up log.
    public struct RestoreSummary: Sendable, Hashable {
        public var pending = 0
        public var settled = 0
        /// Pending promises that could not be carried over (a lease, a running
        /// command, a missing or quarantined parent or input) and were rejected, saying why.
        public var rejected = 0
        /// Stored promises that could not be loaded and are in quarantine.
        public var quarantined = 0
        /// Steps whose command still ran under its monitor: watched again, settled when it ends.
        public var reattached = 0
        /// Steps whose command ended while no daemon ran: settled from what its monitor wrote.
        public var settledFromWrittenOutcome = 0
    }

    /// The reason given to a `then … exec` child whose command was running
    /// when the daemon stopped: it is not run a second time.
    static func interruptedCommand(_ argv: [String]) -> RemoteRejection {
        RemoteRejection(
            message: "not run again: its command was running when the daemon stopped",
            data: ["exec": .array(argv.map(JSONValue.string))])
    }

    /// Rebuilds the promises of a store, in creation order: settled ones as
    /// they were, pending ones pending, with their `then` links and
    /// combinators re-armed and their timeouts running to the same deadlines.
    /// Leased promises (their connection is gone) and `exec` children whose
    /// command had started are rejected, saying why. Each quarantined
    /// promise is logged at error level and counted (`info`), and a pending
    /// child or combinator that depends on one is rejected, naming it and
    /// why it could not be loaded. Call once, on the loop thread, before serving.
    ///
    /// ```swift
    /// let summary = registry.restore(try store.load())
    /// logger.info("Loaded", metadata: ["pending": "\(summary.pending)", "quarantined": "\(summary.quarantined)"])
    /// ```
    @discardableResult
    public func restore(_ contents: StoreContents) -> RestoreSummary {
        var summary = RestoreSummary()
        holdPools()
        defer { resumePools() }
        var rejections: [(RemotePromise, RemoteRejection)] = []
        var writtenOutcomes: [(RemotePromise, ProcessOutcome, stderrTotal: Int, StepOutputFiles)] = []
        var keptStepFiles = Set<Int>()
        let now = now()
        let quarantine = quarantine(contents.quarantined)
        summary.quarantined = contents.quarantined.count
        // Past every number handed out before, those of promises since removed included.
        nextSequence = max(nextSequence, contents.counters[Self.nextSequenceCounter] ?? 0)
        nextGeneratedID = max(nextGeneratedID, contents.counters[Self.nextGeneratedIDCounter] ?? 1)
        restorePoolLimits(contents.poolLimits)
        for promise in contents.promises.sorted(by: { $0.sequence < $1.sequence }) {
            guard entries[promise.id] == nil else { continue }
            let (entry, rejection, started) = rebuild(promise, now: now, quarantine: quarantine)
            if promise.isPending { summary.pending += 1 } else { summary.settled += 1 }
            if let rejection { rejections.append((entry, rejection)) }
            switch started {
            case .watching?:
                summary.reattached += 1
                keptStepFiles.insert(entry.sequence)
            case .written(let outcome, let stderrTotal, let files)?:
                writtenOutcomes.append((entry, outcome, stderrTotal, files))
                keptStepFiles.insert(entry.sequence)
            case .rejected(let reason)?:
                rejections.append((entry, reason))
            case nil:
                break
            }
            if let number = Self.generatedNumber(promise.id) { nextGeneratedID = max(nextGeneratedID, number + 1) }
        }
        restoreLogs(contents.logs)
        sweepStepOutputFolder(keeping: keptStepFiles)
        if retainMilliseconds != nil { queueSettledForRetention() }
        armLeaseGrace()
        // Once every promise is back, so that what these settle finds its children in place.
        for (entry, outcome, stderrTotal, files) in writtenOutcomes
        where settleFromWrittenOutcome(entry, outcome, stderrTotal: stderrTotal, files) {
            summary.settledFromWrittenOutcome += 1
            logger.info("Settled at start-up from the outcome its command's monitor wrote", metadata: [
                "promise.id": "\(entry.id)", "process.status": "\(outcome.exitStatus)",
            ])
        }
        for (entry, rejection) in rejections where settle(entry, .failure(rejection.at(entry.id))) {
            summary.rejected += 1
            logger.info("Rejected at start-up", metadata: ["promise.id": "\(entry.id)", "reason": "\(rejection.message)"])
        }
        return summary
    }

    /// Logs and counts the quarantined promises, and keeps their ids and
    /// sequences from being given again; returns them by id (the newest for
    /// an id set aside twice), for what depends on them.
    private func quarantine(_ quarantined: [QuarantinedPromise]) -> PromiseMap<QuarantinedPromise> {
        journal?.quarantinedCount = quarantined.count
        var byID = PromiseMap<QuarantinedPromise>()
        for promise in quarantined {
            logger.error("A stored promise cannot be loaded: it is in quarantine", metadata: [
                "promise.id": "\(promise.id)", "promise.sequence": "\(promise.sequence)",
                "reason": "\(promise.reason)", "quarantinedAt": "\(promise.time)",
            ])
            byID[promise.id] = promise
            nextSequence = max(nextSequence, promise.sequence + 1)
            if let number = Self.generatedNumber(promise.id) { nextGeneratedID = max(nextGeneratedID, number + 1) }
        }
        return byID
    }

    /// The rejection of a pending promise whose parent or input `id`
    /// (`link` says which) is not among the promises restored.
    private static func missing(_ link: String, _ id: String, _ quarantine: PromiseMap<QuarantinedPromise>) -> RemoteRejection {
        guard let quarantined = quarantine[id] else {
            return RemoteRejection(message: "cannot be restored: its \(link) \"\(id)\" is no longer stored")
        }
        return RemoteRejection(
            message: "cannot be restored: its \(link) \"\(id)\" was quarantined: \(quarantined.reason)",
            data: ["quarantined": .string(id), "reason": .string(quarantined.reason)])
    }

    /// One stored promise back in the registry, and the rejection it gets
    /// once all are back (nil when it carries on as it was).
    private func rebuild(
        _ stored: StoredPromise, now: Int64, quarantine: PromiseMap<QuarantinedPromise>
    ) -> (RemotePromise, RemoteRejection?, StartedStepAtRestart?) {
        guard stored.isPending else {
            if stored.valueOfParent {
                let (entry, rejection) = rebuildSharingParentValue(stored)
                return (entry, rejection, nil)
            }
            if stored.valueOfInputs != nil {
                let (entry, rejection) = rebuildSharingInputValues(stored)
                return (entry, rejection, nil)
            }
            let entry = register(settledPromise(stored), id: stored.id, kind: kind(of: stored),
                                 parentID: stored.parentID, inputIDs: stored.inputIDs, name: stored.name,
                                 restoring: stored)
            // Stored with a value of its own: it keeps it, written again or not.
            entry.hasOwnValue = stored.state == .fulfilled
            fill(entry, from: stored)
            return (entry, nil, nil)
        }
        var rejection: RemoteRejection?
        var started: StartedStepAtRestart?
        let entry: RemotePromise
        switch stored.kind {
        case .then where stored.execStarted && !runsAgainAtRestart(stored):
            // Its command may have done its work, or part of it: it is not run a second time,
            // but settled from its outcome when its monitor outlived the daemon.
            let core = Promise<JSONValue>()
            entry = register(core, id: stored.id, kind: kind(of: stored), parentID: stored.parentID,
                             name: stored.name, restoring: stored)
            started = resumeStartedStep(entry, core, stored)
        case .then:
            if let parentID = stored.parentID, let parent = entries[parentID] {
                let spec = stored.exec.map { argv in
                    ProcessSpec(argv: argv, cwd: stored.cwd, env: stored.env ?? [:],
                                outputLimit: limits.maxProcessOutputBytes)
                }
                entry = makeChild(of: parent, id: stored.id, on: stored.on ?? .fulfilled, exec: spec, restoring: stored)
            } else {
                entry = register(Promise(), id: stored.id, kind: kind(of: stored), parentID: stored.parentID,
                                 name: stored.name, restoring: stored)
                rejection = Self.missing("parent", stored.parentID ?? "", quarantine)
            }
        case .combinator(let combinator):
            let inputIDs = stored.inputIDs ?? []
            let inputs = inputIDs.compactMap { entries[$0] }
            if inputs.count == inputIDs.count {
                entry = register(combined(combinator, policy: stored.policy, stopOnFailure: stored.stopOnFailure,
                                          inputs, id: stored.id), id: stored.id,
                                 kind: .combinator(combinator), inputIDs: inputIDs, name: stored.name,
                                 restoring: stored)
            } else {
                entry = register(Promise(), id: stored.id, kind: .combinator(combinator), inputIDs: inputIDs,
                                 name: stored.name, restoring: stored)
                let missing = inputIDs.first { entries[$0] == nil || entries[$0] === entry } ?? ""
                rejection = Self.missing("input", missing, quarantine)
            }
        case .created:
            entry = register(Promise(), id: stored.id, kind: .created, name: stored.name, restoring: stored)
        }
        if fill(entry, from: stored) == .rejectNow {
            rejection = rejection ?? restartedLeaseExpired()
        }
        if let progress = stored.progress {
            entry.reportedProgress = progress
            promise(of: entry).reportProgress(progress)
        }
        if rejection == nil, let deadline = stored.deadline {
            let (remaining, overflow) = deadline.subtractingReportingOverflow(now)
            armTimeout(entry, afterMilliseconds: overflow ? 0 : UInt64(clamping: max(0, remaining)))
        }
        return (entry, rejection, started)
    }

    /// A fulfilled `then` child stored without its value: it takes its
    /// parent's, the very value (so shared in memory again). Its parent,
    /// earlier in creation order, is back already: a child that shares its
    /// value keeps it from being collected or forgotten. Should the parent be
    /// gone all the same, the child is rejected at start-up, saying so.
    private func rebuildSharingParentValue(_ stored: StoredPromise) -> (RemotePromise, RemoteRejection?) {
        guard let parentID = stored.parentID, let parent = entries[parentID], case .success(let value)? = parent.result
        else {
            // Back as pending, to be rejected once every promise is back.
            var pending = stored
            (pending.state, pending.settled, pending.valueOfParent) = (.pending, nil, false)
            let entry = register(Promise(), id: stored.id, kind: kind(of: stored), parentID: stored.parentID,
                                 name: stored.name, restoring: pending)
            fill(entry, from: stored)
            return (entry, RemoteRejection(
                message: "cannot be restored: it had the value of its parent \"\(stored.parentID ?? "")\", which is no longer stored"))
        }
        let entry = register(Promise(value: value), id: stored.id, kind: kind(of: stored), parentID: parentID,
                             name: stored.name, restoring: stored)
        entry.sharesParentValue = true
        parent.addDependents(1)
        fill(entry, from: stored)
        return (entry, nil)
    }

    /// The fields a stored promise carries that ``register`` does not set;
    /// what the restart does to its lease.
    @discardableResult
    func fill(_ entry: RemotePromise, from stored: StoredPromise) -> LeaseState.RestoreAction {
        entry.policy = stored.policy
        entry.stopOnFailure = stored.stopOnFailure
        entry.progressMessage = stored.progressMessage
        entry.timeoutMilliseconds = stored.timeoutMilliseconds
        entry.deadline = stored.deadline
        let lease = entry.leaseState.restored(leased: stored.lease, graceMilliseconds: leaseGraceMilliseconds)
        if entry.job == nil, let argv = stored.exec {
            // A settled exec child keeps showing its command; it has nothing left to run.
            let job = ExecJob(spec: ProcessSpec(argv: argv, cwd: stored.cwd, env: stored.env ?? [:]))
            job.started = stored.execStarted
            job.pool = stored.pool ?? ExecPools.defaultName
            job.cancelled = true
            entry.job = job
        }
        if let job = entry.job {
            // What the record showed of its command before the restart: `started`, `exitStatus`.
            job.launched = job.launched ?? stored.started
            job.exitStatus = job.exitStatus ?? stored.exitStatus
        }
        return lease
    }

    /// A promise settled as `stored` says: its value, its reason, or cancelled.
    private func settledPromise(_ stored: StoredPromise) -> Promise<JSONValue> {
        switch stored.state {
        case .pending:
            preconditionFailure("stored promise \(stored.id) is pending: it has no settlement")
        case .fulfilled:
            return Promise(value: stored.value ?? .null)
        case .cancelled:
            return Promise(error: CancellationError())
        case .rejected:
            let reason = (stored.reason).flatMap { try? RemoteRejection(checking: $0) }
            return Promise(error: reason ?? RemoteRejection(message: "rejected"))
        }
    }

    func kind(of stored: StoredPromise) -> RemotePromise.Kind {
        switch stored.kind {
        case .created: .created
        // A `then` stored without `on` has the method's default.
        case .then: .then(on: stored.on ?? .fulfilled, exec: stored.exec != nil)
        case .combinator(let combinator): .combinator(combinator)
        }
    }

    /// N of a daemon-made id "pN", so that new ids do not repeat stored ones.
    private static func generatedNumber(_ id: String) -> Int? {
        guard id.hasPrefix(generatedIDPrefix) else { return nil }
        return Int(id.dropFirst(generatedIDPrefix.count))
    }
}
