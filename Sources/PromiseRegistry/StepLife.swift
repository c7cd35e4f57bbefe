/// The life of one `then … exec` step's command, from its turn in a pool to
/// its exit, and what a restarted daemon makes of a step stored as started.
/// A pure value: the owner feeds it events and performs the action each
/// returns (queue, write ahead, launch, settle, signal); no process, store
/// or timer is touched here.
///
/// ```
/// idle ──ask──▶ queued ──slot──▶ writtenAhead ──committed──▶ running ──exited──▶ exited
///   └──ask (slot free)──────────▶ writtenAhead
/// any state before exited ──cancel──▶ cancelled
/// ```
///
/// A step is written ahead (its start stored) before its command starts, so
/// that a daemon that dies while it runs never runs it a second time; its
/// monitor (StepMonitor.swift) leads the command's processes and outlives the daemon.
struct StepLife: Hashable, Sendable {
    enum State: Hashable, Sendable {
        /// Not asked to run yet: its parent has not settled the way it waits for.
        case idle
        /// Waiting for a slot of its pool.
        case queued
        /// Holding a slot; the mark that it started is being committed, nothing runs yet.
        case writtenAhead
        /// Its monitor runs; its pid and start time once they are known.
        case running(LeftoverProcessGroup?)
        /// Its command ended; the outcome settles the step.
        case exited(ProcessOutcome)
        /// Cancelled, or refused before it started: it never runs (again).
        case cancelled
    }

    /// What the owner does after an event.
    enum Action: Hashable, Sendable {
        /// Nothing.
        case none
        /// Take a place in the pool's queue.
        case queue
        /// Store that the command starts, then report ``StepLife/committed(failure:)``.
        case writeAhead
        /// Start the command under its monitor.
        case launch
        /// Store the monitor's pid and start time (a later commit).
        case record(LeftoverProcessGroup)
        /// Settle the step from the command's outcome, and give its slot back.
        case settle(ProcessOutcome)
        /// Reject the step without running its command (the store could not write).
        case reject(String)
        /// Give the slot back (a cancel before the start).
        case releaseSlot
        /// SIGTERM to the monitor's group, SIGKILL after the grace.
        case terminate
    }

    private(set) var state: State = .idle

    init(state: State = .idle) {
        self.state = state
    }

    /// Whether its start was stored: a restarted daemon must not run it again.
    var hasStarted: Bool {
        switch state {
        case .writtenAhead, .running, .exited: true
        case .idle, .queued, .cancelled: false
        }
    }

    /// The parent settled so that the command is to run: a slot now, or the queue.
    mutating func asked(slotFree: Bool) -> Action {
        guard state == .idle else { return .none }
        if slotFree {
            state = .writtenAhead
            return .writeAhead
        }
        state = .queued
        return .queue
    }

    /// Its turn in the queue came.
    mutating func slotGranted() -> Action {
        guard state == .queued else { return .releaseSlot }
        state = .writtenAhead
        return .writeAhead
    }

    /// The write-ahead commit ended: the command starts, or the step is
    /// rejected with the store's failure.
    mutating func committed(failure: String?) -> Action {
        guard state == .writtenAhead else { return .none }
        if let failure {
            state = .cancelled
            return .reject("not run: the store cannot write (\(failure))")
        }
        state = .running(nil)
        return .launch
    }

    /// The monitor started, with this pid and start time.
    mutating func started(_ monitor: LeftoverProcessGroup) -> Action {
        guard state == .running(nil) else { return .none }
        state = .running(monitor)
        return .record(monitor)
    }

    /// The command ended (its monitor reported it, or its written result).
    mutating func exited(_ outcome: ProcessOutcome) -> Action {
        guard case .running = state else { return .none }
        state = .exited(outcome)
        return .settle(outcome)
    }

    /// The step was cancelled.
    mutating func cancelled() -> Action {
        switch state {
        case .idle, .queued:
            state = .cancelled
            return .none
        case .writtenAhead:
            state = .cancelled
            return .releaseSlot
        case .running:
            // It stays running until its monitor reports the exit.
            return .terminate
        case .exited, .cancelled:
            return .none
        }
    }

    /// The daemon stops: a running command is left running for the next
    /// daemon, unless `stopSteps` (then it is stopped as by a cancel).
    mutating func daemonStopping(stopSteps: Bool) -> Action {
        guard case .running = state else { return .none }
        return stopSteps ? .terminate : .none
    }

    /// What a restarted daemon does with a step stored as started.
    enum Restart: Hashable, Sendable {
        /// Its monitor still runs: watch it, and settle from the outcome it writes.
        case reattach(LeftoverProcessGroup)
        /// It ended while no daemon ran, and wrote how: settle from that.
        case settle(ProcessOutcome)
        /// Its command runs but cannot be watched (no monitor): stop it and reject.
        case stopAndReject(LeftoverProcessGroup)
        /// Nothing runs and nothing was written (a reboot, its monitor killed):
        /// reject, saying it is not run again.
        case reject
    }

    /// The decision at restart, and the life it carries on with.
    ///
    /// - Parameters:
    ///   - monitor: the pid and start time stored, nil when the daemon died before storing them.
    ///   - isAlive: whether that very process still runs (same start time).
    ///   - canReattach: whether it is a monitor that writes its outcome.
    ///   - written: the outcome the monitor wrote, if any.
    static func atRestart(
        monitor: LeftoverProcessGroup?, isAlive: Bool, canReattach: Bool, written: ProcessOutcome?
    ) -> (StepLife, Restart) {
        if let monitor, isAlive {
            if canReattach { return (StepLife(state: .running(monitor)), .reattach(monitor)) }
            return (StepLife(state: .cancelled), .stopAndReject(monitor))
        }
        if let written { return (StepLife(state: .exited(written)), .settle(written)) }
        return (StepLife(state: .cancelled), .reject)
    }
}
