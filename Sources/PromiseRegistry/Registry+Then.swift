import Logging
import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// `then`: a child promise that follows another, optionally settled by a
/// command the daemon runs (docs/PROTOCOL.md, "then and exec").
///
/// The rule, for every `on`: the child settles as its parent does, unless its
/// command runs; the command runs when the parent settles in a way `on`
/// selects (`fulfilled`: fulfilled; `rejected`: rejected; `settled`: either),
/// and then its outcome settles the child. Without `exec` there is no command,
/// so the child always settles as its parent did. A cancelled parent never
/// runs a command: its children are cancelled.
extension Registry {
    /// `then` → the child, whose record the dispatcher writes as it
    /// answers: a large value taken from the parent is then written once
    /// for all the children that carry it.
    package func then(_ command: ThenCommand) throws(RegistryError) -> RemotePromise {
        let spec = command.step?.processSpec(outputLimit: limits.maxProcessOutputBytes)
        if let step = command.step { try checkStepPool(step.pool) }
        let parent = try entry(command.parentID)
        let (id, existing) = try claim(command.childID, ifExists: command.ifExists, replace: command.replace)
        if let existing { return existing }
        try reserve()
        let entry = makeChild(of: parent, id: id, on: command.on, exec: spec, pool: command.step?.pool)
        if let job = entry.job, let step = command.step {
            job.retries = step.retries
            job.retryDelayMilliseconds = step.retryDelayMilliseconds
        }
        return entry
    }

    /// Makes and registers the `then` child `id` of `parent`: at a `then`
    /// request, and again at start-up for a child stored pending (`restoring`):
    /// one stored queued is queued again at its place.
    @discardableResult
    func makeChild(
        of parent: RemotePromise, id: String, on: ThenTrigger, exec spec: ProcessSpec?, pool: String? = nil,
        restoring stored: StoredPromise? = nil
    ) -> RemotePromise {
        guard let spec else {
            // Pure and loop-free, so `.inline`: the child is settled as soon as its parent is.
            let child = promise(of: parent).then(on: .inline) { value in value }
            return register(child, id: id, kind: .then(on: on, exec: false), parentID: parent.id, restoring: stored)
        }
        let job = ExecJob(spec: spec)
        job.pool = pool ?? stored?.pool ?? ExecPools.defaultName
        job.retries = stored?.retry ?? 0
        job.retryDelayMilliseconds = stored?.retryDelayMs ?? 0
        job.attempts = stored?.attempts ?? 0
        if let stored, let ticket = stored.queueTicket, !stored.execStarted {
            requeueRestored(job, childID: id, ticket: ticket)
        }
        let child = execChild(of: parent, on: on, job: job, childID: id)
        job.child = child
        watchQueuedTurn(of: job, child: child)
        let entry = register(child, id: id, kind: .then(on: on, exec: true), parentID: parent.id, restoring: stored)
        entry.job = job
        terminateOnCancel(child, job)
        return entry
    }

    /// Once `child` is cancelled, `job`'s command does not start, and a
    /// running one is stopped (SIGTERM, SIGKILL after the grace).
    func terminateOnCancel(_ child: Promise<JSONValue>, _ job: ExecJob) {
        let boxedJob = LoopBound(job)
        let grace = limits.killGraceMilliseconds
        child.onCancel(on: executor) {
            boxedJob.value.cancelled = true
            boxedJob.value.process?.terminate(graceMilliseconds: grace)
            boxedJob.value.abandonRetry?()
        }
    }

    /// What a `settled` command is told about its parent.
    private struct ParentOutcome: Sendable {
        var state: String
        var input: JSONValue
    }

    /// The core chain that runs `job` as `on` says, below `parent`.
    private func execChild(of parent: RemotePromise, on: ThenTrigger, job: ExecJob, childID: String) -> Promise<JSONValue> {
        let registry = WeakLoopBound(self)
        let boxedJob = LoopBound(job)
        let boxedParent = LoopBound(parent)
        let run: @Sendable (JSONValue, String) -> Promise<JSONValue> = { input, state in
            guard let registry = registry.value else { return Promise(error: CancellationError()) }
            return registry.startExec(boxedJob.value, input: input, parentState: state, parent: boxedParent.value,
                                      childID: childID)
        }
        let reason: @Sendable (any Error) -> JSONValue = { error in boxedParent.value.reason(for: error).json }
        switch on {
        case .rejected:
            return promise(of: parent).recover(on: executor) { error throws -> Promise<JSONValue> in
                if error is CancellationError { throw error }
                return run(reason(error), "rejected")
            }
        case .settled:
            let outcome = promise(of: parent)
                .then(on: .inline) { value in ParentOutcome(state: "fulfilled", input: value) }
                .recover(on: executor) { error throws -> ParentOutcome in
                    if error is CancellationError { throw error }
                    return ParentOutcome(state: "rejected", input: reason(error))
                }
            return outcome.then(on: executor) { outcome -> Promise<JSONValue> in run(outcome.input, outcome.state) }
        case .fulfilled:
            return promise(of: parent).then(on: executor) { value -> Promise<JSONValue> in run(value, "fulfilled") }
        }
    }

    /// Starts `job` with `input` as JSON on stdin; the returned promise settles
    /// from the process's outcome (``ProcessOutcome/settlement``).
    func startExec(
        _ job: ExecJob, input: JSONValue, parentState: String, parent: RemotePromise, childID: String
    ) -> Promise<JSONValue> {
        if job.cancelled { return Promise(error: CancellationError()) }
        // In memory nothing waits for a commit that would see it: a parent
        // settled while stopping must not start a command the stop will not wait for.
        if isStopping { return Promise(error: RemoteRejection(message: "not run: the daemon is stopping").at(childID)) }
        if let child = job.child, !child.isPending {
            return Promise(error: RemoteRejection(message: "not run: the promise was already settled").at(childID))
        }
        // Checked at `then`; checked again for a command stored before that check, or by another program.
        if let problem = job.spec.problem {
            return Promise(error: RemoteRejection(
                code: RejectionCode.invalidParams, message: "not run: \(problem.reason)",
                data: ["param": .string(problem.param)], origin: childID))
        }
        do {
            try Self.checkValueBytes(input, limits, what: "the command's input", origin: childID)
        } catch {
            return Promise(error: error)
        }
        // A slot of its pool now, or a place in its queue (Registry+Pools.swift).
        let result = Promise<JSONValue>()
        let refusal = admitExec(job, childID: childID, result: result) { [weak self] slot in
            guard let self else { return }
            job.turn = nil
            guard !job.cancelled, job.child?.isPending ?? true else {
                releaseSlot(slot)
                result.reject(CancellationError())
                return
            }
            job.slot = slot
            beginExec(job, input: input, parentState: parentState, parent: parent, childID: childID, settling: result)
        }
        if let refusal { return Promise(error: refusal) }
        return result
    }

    /// Starts `job`, which holds a slot of its pool (``ExecJob/slot``); its
    /// command's outcome settles `result`.
    private func beginExec(
        _ job: ExecJob, input: JSONValue, parentState: String, parent: RemotePromise, childID: String,
        settling result: Promise<JSONValue>
    ) {
        var spec = job.spec
        spec.killGraceMilliseconds = limits.killGraceMilliseconds
        spec.stdin = inputLine(input, parentState: parentState, parent: parent, job: job)
        spec.env = ["PROMISE_ID": parent.id, "PROMISE_CHILD_ID": childID, "PROMISE_STATE": parentState]
            .merging(job.spec.env) { _, chosen in chosen }
        runningProcesses += 1
        job.started = true
        job.outcome = result
        if journal != nil, services.monitorsSteps, let folder = stepOutputFolder, let sequence = entries[childID]?.sequence {
            let files = StepOutputFiles(folder: folder, sequence: sequence)
            job.outputFiles = files
            spec.outputFiles = files.prefix
        }
        guard let journal else {
            launch(job, spec, settling: result, childID: childID)
            return
        }
        // Write-ahead: the mark that the command started is stored before it starts, so a
        // daemon that dies while it runs is restarted knowing not to run it a second time.
        journal.touch(childID)
        let slot = job.slot
        journal.afterCommit { [weak self, weak job] failure in
            guard let self else { return }
            guard let job, !job.cancelled, !isStopping, failure == nil else {
                execEnded(holding: slot)
                job?.sharedInput = nil
                if let failure {
                    result.reject(RemoteRejection(message: "not run: the store cannot write (\(failure.message))", origin: childID))
                } else if isStopping, let job {
                    result.reject(Self.interruptedCommand(job.spec.argv).at(childID))
                } else {
                    result.reject(CancellationError())
                }
                return
            }
            launch(job, spec, settling: result, childID: childID)
        }
    }

    /// Lines longer than this are shared among a parent's commands (see
    /// ``SharedExecInput``); shorter ones cost less to write again than to keep.
    static let sharedExecInputBytes = 64 << 10

    /// `input` as the line `job`'s command reads: the one a command of the
    /// same parent, settled the same way, still holds, else written now.
    private func inputLine(_ input: JSONValue, parentState: String, parent: RemotePromise, job: ExecJob) -> [UInt8] {
        if let shared = parent.execInput, shared.state == parentState {
            job.sharedInput = shared
            return shared.line
        }
        let line = input.serializedLine()
        if line.count > Self.sharedExecInputBytes {
            let shared = SharedExecInput(state: parentState, line: line)
            parent.execInput = shared
            job.sharedInput = shared
        }
        return line
    }

    /// Starts the process of `job` (counted in `runningProcesses` already)
    /// and settles `result` from its outcome.
    private func launch(_ job: ExecJob, _ spec: ProcessSpec, settling result: Promise<JSONValue>, childID: String) {
        let metadata: Logger.Metadata = ["promise.id": "\(childID)", "process.argv": "\(spec.argv)"]
        let maxDepth = limits.maxValueDepth
        let outputLimit = spec.outputLimit
        let slot = job.slot
        let files = job.outputFiles
        job.launched = now()
        job.attempts += 1
        job.recordedProcess = nil
        do {
            let sequence = entries[childID]?.sequence ?? -1
            let process = try services.launch(spec, onOutput: { [weak self] stream, bytes in
                self?.appendLog(childID, sequence: sequence, stream, bytes)
            }) { [weak self, weak job] outcome in
                job?.process = nil
                job?.exitStatus = outcome.exitStatus
                self?.logger.debug("Process exited", metadata: metadata.merging(
                    ["process.status": "\(outcome.exitStatus)"]) { _, new in new })
                let settlement = outcome.settlement(maxDepth: maxDepth, outputLimit: outputLimit)
                if case .failure = settlement, let self, let job, retriesLeft(job) {
                    retryLater(job, spec, settling: result, childID: childID)
                    return
                }
                self?.execEnded(holding: slot)
                job?.sharedInput = nil
                switch settlement {
                case .success(let value): result.fulfill(value)
                case .failure(let rejection): result.reject(rejection.at(childID))
                }
                self?.removeOnceStored(files, childID: childID)
            }
            // onExit may already have run, inside launch: then there is nothing to keep.
            if result.isPending {
                job.process = process
                recordProcess(process, of: job, childID: childID)
            }
            logger.debug("Process started", metadata: metadata)
        } catch {
            execEnded(holding: slot)
            files?.remove()
            job.sharedInput = nil
            job.exitStatus = 127
            logger.info("Process could not start", metadata: metadata.merging(["error": "\(error)"]) { _, new in new })
            result.reject(RemoteRejection(
                code: 127, message: "cannot run \(spec.argv[0]): \(error)",
                data: ["exitStatus": 127], origin: childID))
        }
    }
}

extension Registry {
    /// Whether `job`'s command, which just failed, runs again: attempts
    /// remain, and it was neither cancelled nor stopped with the daemon.
    func retriesLeft(_ job: ExecJob) -> Bool {
        job.attempts <= job.retries && !job.cancelled && !isStopping
    }

    /// Runs `job`'s failed command again after its delay, holding its slot
    /// meanwhile; the new attempt is stored before it starts (write-ahead).
    /// A cancel during the delay ends the step at once.
    func retryLater(_ job: ExecJob, _ spec: ProcessSpec, settling result: Promise<JSONValue>, childID: String) {
        logger.info("Step failed; running its command again", metadata: [
            "promise.id": "\(childID)", "attempt": "\(job.attempts + 1)", "attempts": "\(job.retries + 1)",
            "process.status": "\(job.exitStatus.map(String.init) ?? "")",
        ])
        var timer: (any ScheduledTimer)?
        let giveUp = { [weak self, weak job] in
            timer?.cancel()
            job?.abandonRetry = nil
            guard let self, let job else { return }
            execEnded(holding: job.slot)
            job.slot = nil
            job.sharedInput = nil
            removeOnceStored(job.outputFiles, childID: childID)
            result.reject(CancellationError())
        }
        job.abandonRetry = giveUp
        timer = services.schedule(afterMilliseconds: job.retryDelayMilliseconds) { [weak self, weak job] in
            guard let self, let job, job.abandonRetry != nil else { return }
            guard !job.cancelled, !isStopping, result.isPending else { return giveUp() }
            job.abandonRetry = nil
            guard let journal else { return launch(job, spec, settling: result, childID: childID) }
            journal.touch(childID)
            journal.afterCommit { [weak self, weak job] _ in
                guard let self, let job else { return }
                guard !job.cancelled, !isStopping else { return giveUp() }
                launch(job, spec, settling: result, childID: childID)
            }
        }
    }
}
