import Foundation
import Logging

/// Timers and child processes on the daemon's libuv loop, for the registry.
/// Loop-thread only; every callback runs on the loop thread.
///
/// Processes get the daemon's environment with `ProcessSpec.env` laid over
/// it, and lead a process group of their own (see ``ChildProcess``). When the
/// daemon stops, ``terminateAll(graceMilliseconds:)`` signals every group
/// still running.
final class UVLoopServices: LoopServices {
    private let loop: UVLoop
    private let logger: Logger
    private let environment: [String: String]
    private var running: [ObjectIdentifier: ChildProcess] = [:]

    init(loop: UVLoop, logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.loop = loop
        self.logger = logger
        self.environment = environment
        // A child that exits before reading its stdin must not kill the daemon.
        signal(SIGPIPE, SIG_IGN)
    }

    /// Processes started and not yet finished.
    var runningCount: Int { running.count }

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
        var merged = environment
        merged.merge(spec.env) { _, new in new }
        let entries = merged.map { "\($0.key)=\($0.value)" }
        let child = try ChildProcess(
            loop: loop, spec: spec, environment: entries, onExit: onExit,
            onFinished: { [weak self] child in
                self?.running[ObjectIdentifier(child)] = nil
            })
        running[ObjectIdentifier(child)] = child
        logger.trace("Started process", metadata: ["pid": "\(child.pid)", "argv0": "\(spec.argv.first ?? "")"])
        return child
    }

    /// SIGTERM to every running process group, SIGKILL after the grace period.
    func terminateAll(graceMilliseconds: UInt64) {
        for child in running.values {
            child.terminate(graceMilliseconds: graceMilliseconds)
        }
    }

    /// SIGKILL to every process group still running.
    func killAll() {
        for child in running.values {
            child.forceKill()
        }
    }
}

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
