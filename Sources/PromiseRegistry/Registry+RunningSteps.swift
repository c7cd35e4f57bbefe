import Logging
import Promise
import PromiseJSON
import PromiseModel
import PromiseStore
#if canImport(Glibc)
import Glibc
#endif

/// Steps whose command outlives the daemon (docs/DURABILITY.md, "Steps
/// running at a restart"): a `then … exec` command runs under a monitor
/// (StepMonitor.swift) that keeps its output and writes its outcome in the
/// store's step folder (``StepOutputFiles``). A clean stop leaves such steps
/// running; the next start re-attaches to each monitor still running and
/// settles its step when it ends, or settles at once a step whose monitor
/// wrote its outcome while no daemon ran. A step whose monitor is gone
/// without a word (a reboot) is rejected, and never run again.
extension Registry {
    /// What the restart does with a pending step stored as started, once
    /// every promise is back.
    enum StartedStepAtRestart {
        /// Its monitor runs and is watched: it settles when it ends.
        case watching
        /// Settle it from what its monitor wrote.
        case written(ProcessOutcome, stderrTotal: Int, StepOutputFiles)
        /// Reject it, saying why.
        case rejected(RemoteRejection)
    }

    /// Whether the daemon, stopping, leaves `job`'s command running for the
    /// next one: it runs under a monitor that writes its outcome, whose pid
    /// and start time are stored, and `--stop-steps` was not given.
    func leavesRunning(_ job: ExecJob) -> Bool {
        guard job.outputFiles != nil, job.process != nil, let monitor = job.recordedProcess else { return false }
        var life = StepLife(state: .running(monitor))
        return life.daemonStopping(stopSteps: limits.stopStepsAtStop) == StepLife.Action.none
    }

    /// Removes a step's files once its settlement is stored: a daemon that
    /// dies before then finds them at its restart.
    func removeOnceStored(_ files: StepOutputFiles?, childID: String) {
        guard let files else { return }
        guard journal != nil, let entry = entries[childID] else { return files.remove() }
        let registry = WeakLoopBound(self)
        promise(of: entry).onSettled(on: executor) { _ in
            guard let journal = registry.value?.journal else { return files.remove() }
            journal.afterCommit { _ in files.remove() }
        }
    }

    /// At start-up, for a pending `then … exec` child whose command had
    /// started (`core` is its promise): re-attaches to its monitor if that
    /// still runs, else takes the outcome the monitor wrote, else stops a
    /// command that cannot be watched, or rejects the step.
    func resumeStartedStep(_ entry: RemotePromise, _ core: Promise<JSONValue>, _ stored: StoredPromise)
        -> StartedStepAtRestart
    {
        let files = stepOutputFolder.map { StepOutputFiles(folder: $0, sequence: stored.sequence) }
        let monitor = stored.execPid.flatMap { pid in
            stored.execStartTime.map { LeftoverProcessGroup(pid: pid, startTime: $0) }
        }
        let isAlive = monitor?.isSame(in: leftoverProcesses) ?? false
        var canReattach = false
        if isAlive, let monitor, let files {
            canReattach = StepMonitor.isMonitor(pid: monitor.pid, writing: files.prefix)
        }
        let written = isAlive ? nil : files?.written(limit: limits.maxProcessOutputBytes)
        let (_, decision) = StepLife.atRestart(
            monitor: monitor, isAlive: isAlive, canReattach: canReattach, written: written?.outcome)
        switch decision {
        case .reattach(let group):
            guard let files else { return .rejected(stopLeftoverCommand(of: stored)) }
            if reattach(entry, core, stored, group, files) { return .watching }
            // It ended between the look and the watch: what it wrote, if anything.
            if let written = files.written(limit: limits.maxProcessOutputBytes) {
                return .written(written.outcome, stderrTotal: written.stderrTotal, files)
            }
            return .rejected(Self.interruptedCommand(stored.exec ?? []))
        case .settle(let outcome):
            guard let files, let written else { return .rejected(Self.interruptedCommand(stored.exec ?? [])) }
            return .written(outcome, stderrTotal: written.stderrTotal, files)
        case .stopAndReject:
            return .rejected(stopLeftoverCommand(of: stored))
        case .reject:
            return .rejected(Self.interruptedCommand(stored.exec ?? []))
        }
    }

    /// Whether a step stored as started runs again after the restart, as a
    /// step whose parent has settled does: it has attempts left (`retry`),
    /// and its command failed while no daemon ran, or its monitor is gone
    /// without a word. A monitor still running is re-attached to instead.
    func runsAgainAtRestart(_ stored: StoredPromise) -> Bool {
        guard let retry = stored.retry, (stored.attempts ?? 1) <= retry else { return false }
        if let pid = stored.execPid, let startTime = stored.execStartTime,
           LeftoverProcessGroup(pid: pid, startTime: startTime).isSame(in: leftoverProcesses) {
            return false
        }
        guard let files = stepOutputFolder.map({ StepOutputFiles(folder: $0, sequence: stored.sequence) }),
              let written = files.written(limit: limits.maxProcessOutputBytes)
        else { return true }
        guard case .failure = written.outcome.settlement(maxDepth: limits.maxValueDepth,
                                                         outputLimit: limits.maxProcessOutputBytes)
        else { return false }
        logger.info("A step failed while no daemon ran; running its command again", metadata: [
            "promise.id": "\(stored.id)", "attempt": "\((stored.attempts ?? 1) + 1)", "attempts": "\(retry + 1)",
        ])
        return true
    }

    /// Settles a step restored as started from what its monitor wrote: its
    /// log completed, its exit status kept, its files removed once stored.
    /// Returns whether this settled it.
    func settleFromWrittenOutcome(
        _ entry: RemotePromise, _ outcome: ProcessOutcome, stderrTotal: Int, _ files: StepOutputFiles
    ) -> Bool {
        appendWrittenOutput(of: entry, outcome, stderrTotal: stderrTotal)
        entry.job?.exitStatus = outcome.exitStatus
        let settled: Bool
        switch outcome.settlement(maxDepth: limits.maxValueDepth, outputLimit: limits.maxProcessOutputBytes) {
        case .success(let value): settled = settle(entry, .success(value))
        case .failure(let rejection): settled = settle(entry, .failure(rejection.at(entry.id)))
        }
        removeOnceStored(files, childID: entry.id)
        return settled
    }

    /// Watches the monitor `group` of the step `entry`, which holds a slot
    /// of its pool until the monitor ends. False when it could not be
    /// watched because it has ended (or its pid is now another process's).
    private func reattach(
        _ entry: RemotePromise, _ core: Promise<JSONValue>, _ stored: StoredPromise,
        _ group: LeftoverProcessGroup, _ files: StepOutputFiles
    ) -> Bool {
        let job = ExecJob(spec: ProcessSpec(argv: stored.exec ?? [], cwd: stored.cwd, env: stored.env ?? [:],
                                            outputLimit: limits.maxProcessOutputBytes))
        job.started = true
        job.pool = stored.pool ?? ExecPools.defaultName
        job.recordedProcess = group
        job.outputFiles = files
        job.reattached = core
        let registry = WeakLoopBound(self)
        let (id, sequence) = (entry.id, entry.sequence)
        let watch: any ScheduledTimer
        do {
            watch = try services.watchExit(of: group.pid) { registry.value?.reattachedMonitorEnded(id, sequence: sequence) }
        } catch {
            return false
        }
        // The pidfd holds the process now: is it still the monitor that was looked at?
        guard group.isSame(in: leftoverProcesses) else {
            watch.cancel()
            return false
        }
        job.process = ReattachedMonitor(group: group, watch: watch, services: services, system: leftoverProcesses)
        let pool = pools[job.pool]
            ?? pools.pool(job.pool, makingWithLimit: pools[ExecPools.defaultName]?.limit ?? limits.maxRunningProcesses)
        job.slot = pools.take(pool, for: .step(id))
        runningProcesses += 1
        entry.job = job
        terminateOnCancel(core, job)
        logger.info("Re-attached to a step left running by the previous daemon", metadata: [
            "promise.id": "\(id)", "process.pid": "\(group.pid)", "process.argv": "\(job.spec.argv)",
        ])
        return true
    }

    /// The re-attached monitor of step `id` has ended: the step settles
    /// from what it wrote, or is rejected when it wrote nothing (it was killed).
    private func reattachedMonitorEnded(_ id: String, sequence: Int) {
        guard let entry = entries[id], entry.sequence == sequence, let job = entry.job, job.reattached != nil else { return }
        job.process = nil
        let slot = job.slot
        job.slot = nil
        execEnded(holding: slot)
        guard let files = job.outputFiles, let written = files.written(limit: limits.maxProcessOutputBytes) else {
            job.outputFiles?.remove()
            _ = settle(entry, .failure(Self.interruptedCommand(job.spec.argv).at(id)))
            return
        }
        logger.debug("Re-attached step ended", metadata: ["promise.id": "\(id)", "process.status": "\(written.outcome.exitStatus)"])
        _ = settleFromWrittenOutcome(entry, written.outcome, stderrTotal: written.stderrTotal, files)
    }

    /// Removes the files of the step folder that no step still needs (their
    /// step settled, and the daemon stopped before removing them), keeping
    /// those of the sequences in `kept`.
    func sweepStepOutputFolder(keeping kept: Set<Int>) {
        guard let folder = stepOutputFolder, let directory = opendir(folder) else { return }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let sequence = StepOutputFiles.sequence(ofFileNamed: name), !kept.contains(sequence) else { continue }
            unlink(folder + "/" + name)
        }
    }
}

/// A step's monitor that a restarted daemon watches without being its
/// parent (``Registry/resumeStartedStep(_:_:_:)``): cancelling the step
/// signals its group, as the daemon that started it would. Loop thread only.
final class ReattachedMonitor: RunningProcess {
    let group: LeftoverProcessGroup
    private let watch: any ScheduledTimer
    private let services: any LoopServices
    private let system: LeftoverProcessGroup.System

    init(group: LeftoverProcessGroup, watch: any ScheduledTimer, services: any LoopServices,
         system: LeftoverProcessGroup.System) {
        self.group = group
        self.watch = watch
        self.services = services
        self.system = system
    }

    var processID: Int32? { group.pid }

    /// SIGTERM (and SIGCONT) to the monitor's group, which passes it on to
    /// all the command started and kills them after its grace; SIGKILL to
    /// the group ``StepMonitor/backstopMilliseconds`` after that, should the
    /// monitor still run. Each only while the pid is still the monitor's.
    func terminate(graceMilliseconds: UInt64) {
        let (group, system) = (group, system)
        guard group.signalIfSame(SIGTERM, in: system) else { return }
        group.signalIfSame(SIGCONT, in: system)
        _ = services.schedule(afterMilliseconds: graceMilliseconds + StepMonitor.backstopMilliseconds) {
            group.signalIfSame(SIGKILL, in: system)
        }
    }

    func leaveRunning() {
        watch.cancel()
    }
}

@available(*, unavailable)
extension ReattachedMonitor: Sendable {}
