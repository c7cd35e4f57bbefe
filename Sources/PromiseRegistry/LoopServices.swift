import PromiseModel

/// Timers and child processes, as the registry needs them. The daemon
/// implements these on its libuv loop; unit tests use fakes. Every callback is
/// delivered on the loop thread.
public protocol LoopServices: AnyObject {
    /// Runs `body` once, `milliseconds` from now, unless cancelled first.
    func schedule(afterMilliseconds milliseconds: UInt64, _ body: @escaping () -> Void) -> any ScheduledTimer

    /// Starts a process for `then … exec`. `onExit` is called exactly once,
    /// unless `launch` throws (the program could not be started).
    func launch(
        _ spec: ProcessSpec,
        onExit: @escaping (ProcessOutcome) -> Void
    ) throws -> any RunningProcess

    /// Like ``launch(_:onExit:)``, and `onOutput` gets each chunk of the
    /// process's stdout and stderr as it is read, before `onExit`, for
    /// the step's log.
    func launch(
        _ spec: ProcessSpec,
        onOutput: @escaping (StepStream, UnsafeRawBufferPointer) -> Void,
        onExit: @escaping (ProcessOutcome) -> Void
    ) throws -> any RunningProcess

    /// Calls `onExit` once process `pid`, which this daemon did not start
    /// (a step's monitor left by the daemon before a restart), has ended;
    /// cancelling the returned timer stops watching.
    ///
    /// - Throws: when it cannot be watched (it has ended already, or the
    ///   kernel cannot watch a process that is not a child).
    func watchExit(of pid: Int32, _ onExit: @escaping () -> Void) throws -> any ScheduledTimer

    /// Whether `launch` runs commands under a step's monitor
    /// (``StepMonitor``), which keeps their output and outcome in files so
    /// that a restarted daemon can settle their steps.
    var monitorsSteps: Bool { get }
}

extension LoopServices {
    /// For services that cannot stream output (test fakes): the output
    /// kept in the outcome is given as one chunk per stream, at the exit.
    public func launch(
        _ spec: ProcessSpec,
        onOutput: @escaping (StepStream, UnsafeRawBufferPointer) -> Void,
        onExit: @escaping (ProcessOutcome) -> Void
    ) throws -> any RunningProcess {
        try launch(spec) { outcome in
            outcome.stdout.withUnsafeBytes { onOutput(.stdout, $0) }
            outcome.stderr.withUnsafeBytes { onOutput(.stderr, $0) }
            onExit(outcome)
        }
    }
}

extension LoopServices {
    /// For services that cannot watch other processes (test fakes): none can be watched.
    public func watchExit(of pid: Int32, _ onExit: @escaping () -> Void) throws -> any ScheduledTimer {
        throw ProcessWatchUnavailable()
    }
}

extension LoopServices {
    /// For services that start commands themselves (test fakes): no monitor.
    public var monitorsSteps: Bool { false }
}

/// Why ``LoopServices/watchExit(of:_:)`` watches nothing: these services cannot.
public struct ProcessWatchUnavailable: Error, Sendable {
    public init() {}
}

/// A timer that can be stopped before it fires.
public protocol ScheduledTimer: AnyObject {
    func cancel()
}

/// A process started by `LoopServices.launch`.
public protocol RunningProcess: AnyObject {
    /// Sends SIGTERM to the process group, then SIGKILL after `graceMilliseconds`
    /// if it is still running. `onExit` still fires when it is gone.
    func terminate(graceMilliseconds: UInt64)

    /// The process's id while it runs, for the record's `pid`; nil before
    /// it has started (a spawn waiting for a file descriptor).
    var processID: Int32? { get }

    /// The daemon stops and leaves this process running for the next one
    /// (a step's monitor, which writes its outcome where that daemon finds
    /// it): it is no longer watched, signalled or waited for, and its
    /// `onExit` is never called.
    func leaveRunning()
}

extension RunningProcess {
    /// Fakes in tests have no process to name.
    public var processID: Int32? { nil }

    /// Fakes in tests have nothing to let go of.
    public func leaveRunning() {}
}

/// What to run for `then … exec`.
public struct ProcessSpec: Sendable, Hashable {
    public var argv: [String]
    /// Written to the process's stdin, which is then closed.
    public var stdin: [UInt8]
    public var cwd: String?
    /// Extra variables, added to the daemon's own environment.
    public var env: [String: String]
    /// At most this many bytes of stdout are kept (more rejects the step); the end of stderr is kept likewise.
    public var outputLimit: Int
    /// How long the command and what it started have between SIGTERM and
    /// SIGKILL when it is stopped (`killGraceMilliseconds`): its monitor,
    /// which outlives the daemon, keeps it (StepMonitor.swift).
    public var killGraceMilliseconds: UInt64
    /// Where the command's monitor keeps its output and writes its outcome
    /// (``StepOutputFiles``: PREFIX.out, PREFIX.err, PREFIX.result), so that
    /// a daemon restarted while it runs can settle its step; nil keeps
    /// nothing (a daemon without a store).
    public var outputFiles: String?

    public init(argv: [String], stdin: [UInt8] = [], cwd: String? = nil,
                env: [String: String] = [:], outputLimit: Int = 1 << 20, killGraceMilliseconds: UInt64 = 2_000,
                outputFiles: String? = nil) {
        self.argv = argv
        self.stdin = stdin
        self.cwd = cwd
        self.env = env
        self.outputLimit = outputLimit
        self.killGraceMilliseconds = killGraceMilliseconds
        self.outputFiles = outputFiles
    }
}

/// How a process ended.
public struct ProcessOutcome: Sendable, Hashable {
    /// The exit status, or 128 + signal number when it was killed by a signal.
    public var exitStatus: Int32
    /// The signal that killed it, if any.
    public var signal: Int32?
    /// The first `outputLimit` bytes of stdout.
    public var stdout: [UInt8]
    /// The last `outputLimit` bytes of stderr.
    public var stderr: [UInt8]
    /// True when stdout was longer than the limit and was cut.
    public var stdoutTruncated: Bool

    public init(exitStatus: Int32, signal: Int32? = nil, stdout: [UInt8] = [], stderr: [UInt8] = [],
                stdoutTruncated: Bool = false) {
        self.exitStatus = exitStatus
        self.signal = signal
        self.stdout = stdout
        self.stderr = stderr
        self.stdoutTruncated = stdoutTruncated
    }
}
