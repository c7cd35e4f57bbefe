import PromiseRegistry

/// Timers that fire only when the test says, and processes the test ends.
package final class RPCFakeLoop: LoopServices {
    package final class Timer: ScheduledTimer {
        package let due: UInt64
        package var body: (() -> Void)?
        package var isCancelled = false
        package init(due: UInt64, body: @escaping () -> Void) {
            self.due = due
            self.body = body
        }
        package func cancel() {
            isCancelled = true
            body = nil
        }
    }

    package final class Process: RunningProcess {
        package let spec: ProcessSpec
        private var onExit: ((ProcessOutcome) -> Void)?
        /// The grace periods `terminate` was called with.
        package var terminations: [UInt64] = []
        /// The pid records show while it runs.
        package let processID: Int32? = 4242
        package init(spec: ProcessSpec, onExit: @escaping (ProcessOutcome) -> Void) {
            self.spec = spec
            self.onExit = onExit
        }
        package func terminate(graceMilliseconds: UInt64) {
            terminations.append(graceMilliseconds)
        }
        package var hasExited: Bool { onExit == nil }
        /// Ends the process with this outcome.
        package func exit(_ status: Int32, stdout: String = "", stderr: String = "", signal: Int32? = nil,
                          stdoutTruncated: Bool = false) {
            let exit = onExit
            onExit = nil
            exit?(ProcessOutcome(exitStatus: status, signal: signal, stdout: Array(stdout.utf8),
                                 stderr: Array(stderr.utf8), stdoutTruncated: stdoutTruncated))
        }
    }

    package struct LaunchFailure: Error, CustomStringConvertible {
        package var description: String { "No such file or directory" }
        package init() {}
    }

    package private(set) var now: UInt64 = 0
    package private(set) var timers: [Timer] = []
    package private(set) var processes: [Process] = []
    /// When set, `launch` throws it.
    package var launchError: (any Error)?
    /// Whether steps run under a monitor, as the daemon's loop says when it can.
    package var monitorsSteps = false

    package init() {}

    package func schedule(afterMilliseconds milliseconds: UInt64, _ body: @escaping () -> Void) -> any ScheduledTimer {
        let timer = Timer(due: now + milliseconds, body: body)
        timers.append(timer)
        return timer
    }

    package func launch(_ spec: ProcessSpec, onExit: @escaping (ProcessOutcome) -> Void) throws -> any RunningProcess {
        if let launchError { throw launchError }
        let process = Process(spec: spec, onExit: onExit)
        processes.append(process)
        return process
    }

    /// Moves the clock on, firing the timers that come due, in order.
    package func advance(by milliseconds: UInt64) {
        now += milliseconds
        while let timer = timers.filter({ !$0.isCancelled && $0.body != nil && $0.due <= now })
            .min(by: { $0.due < $1.due })
        {
            let body = timer.body
            timer.body = nil
            body?()
        }
    }

    /// Timers neither fired nor cancelled.
    package var liveTimers: Int { timers.filter { $0.body != nil }.count }
}
