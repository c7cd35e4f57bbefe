import Foundation
import Logging
import PromiseModel
import PromiseRPC
import PromiseRegistry

/// Timers and child processes on the daemon's libuv loop, for the registry.
/// Loop-thread only; every callback runs on the loop thread.
///
/// Processes get the daemon's environment with `ProcessSpec.env` laid over
/// it, and lead a process group of their own (see ``ChildProcess``). When the
/// daemon stops, ``terminateAll(graceMilliseconds:)`` signals every group
/// still running.
///
/// A process that cannot start for a reason that passes is tried again after
/// ``spawnRetryMilliseconds`` (3.9 s in all): the daemon (`EMFILE`) or the
/// system (`ENFILE`) out of file descriptors, which come back as clients
/// leave (with the connection table full, a step that is not tried again
/// would be rejected for good, "uv_spawn: too many open files", and stored
/// so); or a program still open for writing (`ETXTBSY`), as when the step
/// before has just written it and a process forked meanwhile still holds
/// the descriptor for a moment. Only when the last try fails too does
/// `onExit` get status 127, as for a program that cannot start.
final class UVLoopServices: LoopServices {
    /// The waits before each new try of a spawn that failed for a reason that passes.
    static let spawnRetryMilliseconds: [UInt64] = [10, 20, 50, 100, 200, 500, 1_000, 2_000]

    private let loop: UVLoop
    private let logger: Logger
    private let environment: [String: String]
    private var running: [ObjectIdentifier: ChildProcess] = [:]
    /// Processes waiting to be tried again.
    private var retrying: [ObjectIdentifier: SpawnRetry] = [:]
    /// The waits between tries; tests shorten them.
    var spawnRetryMilliseconds = UVLoopServices.spawnRetryMilliseconds
    /// Starts a child: `ChildProcess.init`, unless a test fails it as a full table would.
    var spawnChild: (UVLoop, ProcessSpec, [String], @escaping (ProcessOutcome) -> Void,
                     @escaping (ChildProcess) -> Void) throws(UVError) -> ChildProcess = { loop, spec, environment, onExit, onFinished throws(UVError) in
        try ChildProcess(loop: loop, spec: spec, environment: environment, onExit: onExit, onFinished: onFinished)
    }

    init(loop: UVLoop, logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.loop = loop
        self.logger = logger
        self.environment = environment
        // A child that exits before reading its stdin must not kill the daemon.
        signal(SIGPIPE, SIG_IGN)
    }

    /// Processes started and not yet finished, or waiting to start.
    var runningCount: Int { running.count + retrying.count }

    func schedule(afterMilliseconds milliseconds: UInt64, _ body: @escaping () -> Void) -> any ScheduledTimer {
        let timer: UVTimer
        do {
            timer = try UVTimer(loop: loop)
        } catch {
            // uv_timer_init only fills in a struct; it has no failure path.
            fatalError("uv_timer_init failed: \(error)")
        }
        timer.start(afterMilliseconds: milliseconds) { [timer] in
            timer.close()
            body()
        }
        return OneShotTimer(timer)
    }

    func launch(_ spec: ProcessSpec, onExit: @escaping (ProcessOutcome) -> Void) throws -> any RunningProcess {
        try launch(spec, onOutput: { _, _ in }, onExit: onExit)
    }

    func launch(
        _ spec: ProcessSpec, onOutput: @escaping (StepStream, UnsafeRawBufferPointer) -> Void,
        onExit: @escaping (ProcessOutcome) -> Void
    ) throws -> any RunningProcess {
        var merged = environment
        merged.merge(spec.env) { _, new in new }
        let entries = merged.map { "\($0.key)=\($0.value)" }
        switch start(spec, entries, onExit: onExit) {
        case .success(let child):
            child.onOutput = onOutput
            return child
        case .failure(let error) where Self.isTransient(error):
            let retry = SpawnRetry(spec: spec, onExit: onExit)
            retry.onOutput = onOutput
            retrying[ObjectIdentifier(retry)] = retry
            logger.info("Process could not start yet; trying again",
                        metadata: ["argv0": "\(spec.argv.first ?? "")", "error": "\(error)"])
            scheduleRetry(retry, entries, attempt: 0, error)
            return retry
        case .failure(let error):
            throw error
        }
    }

    private func start(_ spec: ProcessSpec, _ entries: [String],
                       onExit: @escaping (ProcessOutcome) -> Void) -> Result<ChildProcess, UVError> {
        let child: ChildProcess
        do {
            child = try spawnChild(loop, spec, entries, onExit) { [weak self] child in
                self?.running[ObjectIdentifier(child)] = nil
            }
        } catch {
            return .failure(error)
        }
        running[ObjectIdentifier(child)] = child
        logger.trace("Started process", metadata: ["pid": "\(child.pid)", "argv0": "\(spec.argv.first ?? "")"])
        return .success(child)
    }

    /// Tries `retry` again after the `attempt`th wait; after the last, ends
    /// it as a program that could not start.
    private func scheduleRetry(_ retry: SpawnRetry, _ entries: [String], attempt: Int, _ error: UVError) {
        guard attempt < spawnRetryMilliseconds.count else {
            retrying[ObjectIdentifier(retry)] = nil
            retry.end(Self.notStarted(retry.spec, "\(error), still after \(attempt + 1) tries"))
            return
        }
        retry.timer = schedule(afterMilliseconds: spawnRetryMilliseconds[attempt]) { [weak self, weak retry] in
            guard let self, let retry, !retry.isOver else { return }
            switch start(retry.spec, entries, onExit: { [weak retry] outcome in retry?.end(outcome) }) {
            case .success(let child):
                retrying[ObjectIdentifier(retry)] = nil
                child.onOutput = retry.onOutput
                retry.child = child
            case .failure(let error) where Self.isTransient(error):
                scheduleRetry(retry, entries, attempt: attempt + 1, error)
            case .failure(let error):
                retrying[ObjectIdentifier(retry)] = nil
                retry.end(Self.notStarted(retry.spec, "\(error)"))
            }
        }
    }

    /// Whether a spawn that failed with `error` may start if tried again.
    private static func isTransient(_ error: UVError) -> Bool {
        error.name == "EMFILE" || error.name == "ENFILE" || error.name == "ETXTBSY"
    }

    /// What a process that could not start ends with: 127, as a shell says
    /// of a command it cannot run, and the reason as its stderr.
    private static func notStarted(_ spec: ProcessSpec, _ reason: String) -> ProcessOutcome {
        ProcessOutcome(exitStatus: 127, stderr: Array("cannot run \(spec.argv.first ?? ""): \(reason)".utf8))
    }

    func watchExit(of pid: Int32, _ onExit: @escaping () -> Void) throws -> any ScheduledTimer {
        try ProcessExitWatch(loop: loop, pid: pid, onExit: onExit)
    }

    /// Commands run under a monitor in an executable that can be one.
    var monitorsSteps: Bool { StepMonitor.isAvailable }

    /// SIGTERM to every running process group, SIGKILL after the grace period.
    func terminateAll(graceMilliseconds: UInt64) {
        for child in running.values {
            child.terminate(graceMilliseconds: graceMilliseconds)
        }
        endRetries()
    }

    /// SIGKILL to every process group still running.
    func killAll() {
        for child in running.values {
            child.forceKill()
        }
        endRetries()
    }

    /// Processes that never started end as if stopped by SIGTERM.
    private func endRetries() {
        let waiting = retrying.values
        retrying = [:]
        for retry in waiting { retry.terminate(graceMilliseconds: 0) }
    }
}

/// A process waiting for a file descriptor to start, as the registry sees
/// it: `terminate` before the start ends it without running it.
private final class SpawnRetry: RunningProcess {
    let spec: ProcessSpec
    var timer: (any ScheduledTimer)?
    /// The process, once it started.
    var child: ChildProcess?
    /// Given to the process once it starts.
    var onOutput: ((StepStream, UnsafeRawBufferPointer) -> Void)?
    private var onExit: ((ProcessOutcome) -> Void)?

    init(spec: ProcessSpec, onExit: @escaping (ProcessOutcome) -> Void) {
        self.spec = spec
        self.onExit = onExit
    }

    /// `onExit` has run.
    var isOver: Bool { onExit == nil }

    var processID: Int32? { child?.pid }

    func leaveRunning() {
        child?.leaveRunning()
    }

    func terminate(graceMilliseconds: UInt64) {
        if let child { return child.terminate(graceMilliseconds: graceMilliseconds) }
        timer?.cancel()
        timer = nil
        end(ProcessOutcome(exitStatus: 128 + SIGTERM, signal: SIGTERM))
    }

    /// Runs `onExit` once.
    func end(_ outcome: ProcessOutcome) {
        guard let onExit else { return }
        self.onExit = nil
        onExit(outcome)
    }
}

@available(*, unavailable)
extension SpawnRetry: Sendable {}

/// A ``UVTimer`` as the registry sees it: fires once, or never once cancelled.
private final class OneShotTimer: ScheduledTimer {
    private let timer: UVTimer

    init(_ timer: UVTimer) {
        self.timer = timer
    }

    func cancel() {
        timer.close()
    }
}

@available(*, unavailable)
extension UVLoopServices: Sendable {}
