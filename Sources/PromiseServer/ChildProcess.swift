import Glibc
import PromiseModel
import PromiseRPC
import PromiseRegistry

/// A process started for `then … exec`: its stdin is fed then closed, its
/// stdout kept up to a limit, the end of its stderr kept up to the same
/// limit. Loop-thread only.
///
/// Where the daemon's executable can be one (``StepMonitor``), the process
/// started is the command's monitor, which starts the command, kills what it
/// leaves behind, and ends as it did; else the command itself.
///
/// A command whose stdout passes the limit is killed there (with all it
/// started): its step is rejected whatever it does next, and a command that
/// never ends (`yes`) must not run for ever.
///
/// `onExit` runs once, after the process has exited and both output pipes
/// reached their end, or ``outputGraceMilliseconds`` after the exit if a
/// background grandchild still holds them open (the outcome must not wait
/// for a process the daemon did not start).
final class ChildProcess: RunningProcess {
    /// How long output may still arrive after the process exited.
    static let outputGraceMilliseconds: UInt64 = 250

    /// The monitor's pid, else the command's: either leads the process group signalled.
    let pid: Int32
    var processID: Int32? { pid }
    /// Whether `pid` is the command's monitor.
    private let monitored: Bool
    private let process: StartedProcess
    private let stdin: UVPipe
    private let stdout: UVPipe
    private let stderr: UVPipe
    private let stdinBytes = UVWriteBuffer()
    private let limit: Int
    private var stdoutBytes: [UInt8] = []
    private var stdoutTruncated = false
    private var stderrBytes: [UInt8] = []
    private var openOutputs = 2
    private var exit: (status: Int64, signal: Int32)?
    private var graceTimer: UVTimer?
    private var onExit: ((ProcessOutcome) -> Void)?
    private let loop: UVLoop
    /// Told when the process is done, so that its owner can forget it.
    private let onFinished: (ChildProcess) -> Void
    /// Gets each chunk of output as it is read (the step's log). Set right
    /// after the start: nothing is read before the loop's next turn.
    var onOutput: ((StepStream, UnsafeRawBufferPointer) -> Void)?

    /// Starts `spec.argv` with `environment` (the whole environment, `NAME=value`),
    /// in a session and process group of its own, with `starter`.
    ///
    /// - Throws: `UVError` when the program cannot be started (not found,
    ///   not executable, `cwd` missing); `onExit` is then never called.
    init(
        loop: UVLoop,
        spec: ProcessSpec,
        environment: [String],
        starter: ProcessStarter = .preferred,
        onExit: @escaping (ProcessOutcome) -> Void,
        onFinished: @escaping (ChildProcess) -> Void
    ) throws(UVError) {
        self.loop = loop
        limit = max(0, spec.outputLimit)
        self.onExit = onExit
        self.onFinished = onFinished
        var pipes: [UVPipe] = []
        do {
            for _ in 0..<3 { pipes.append(try UVPipe(loop: loop)) }
        } catch {
            pipes.forEach { $0.close() }
            throw error
        }
        stdin = pipes[0]
        stdout = pipes[1]
        stderr = pipes[2]
        var exited: ((Int64, Int32) -> Void)?
        monitored = starter == .posixSpawn && StepMonitor.isAvailable
        do {
            switch starter {
            case .posixSpawn:
                process = .posixSpawn(try Self.posixSpawn(
                    loop: loop, spec: spec, monitored: monitored, environment: environment, pipes: pipes,
                    onExit: { status, signal in exited?(status, signal) }))
            case .uvSpawn:
                process = .uvSpawn(try UVProcess.spawn(
                    loop: loop, argv: spec.argv, environment: environment, cwd: spec.cwd,
                    stdin: stdin, stdout: stdout, stderr: stderr,
                    onExit: { status, signal in exited?(status, signal) }))
            }
        } catch {
            pipes.forEach { $0.close() }
            throw error
        }
        pid = process.pid
        exited = { [unowned self] status, signal in processExited(status: status, signal: signal) }

        feedStdin(spec.stdin)
        startReading(stdout) { [unowned self] bytes in keepStdout(bytes) }
        startReading(stderr) { [unowned self] bytes in keepStderr(bytes) }
    }

    /// Three socket pairs, as uv_spawn made for its pipes: the daemon's ends
    /// opened in `pipes`, the child's ends its fds 0, 1 and 2, closed here
    /// once it has started. On failure the caller closes `pipes`.
    private static func posixSpawn(
        loop: UVLoop,
        spec: ProcessSpec,
        monitored: Bool,
        environment: [String],
        pipes: [UVPipe],
        onExit: @escaping (Int64, Int32) -> Void
    ) throws(UVError) -> PosixSpawnProcess {
        var childEnds: [Int32] = []
        defer { childEnds.forEach { _ = Glibc.close($0) } }
        for pipe in pipes {
            // What libuv 1.44's uv_spawn makes for each UV_CREATE_PIPE, so
            // that a command sees the same kind of stdin/stdout/stderr as
            // under `UVProcess`.
            var pair: [Int32] = [-1, -1]
            if socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) != 0 {
                throw UVError(code: -errno, function: "uv_spawn")
            }
            childEnds.append(pair[1])
            do {
                try pipe.open(pair[0])
            } catch {
                _ = Glibc.close(pair[0])
                throw UVError(code: error.code, function: "uv_spawn")
            }
        }
        let stdio = (childEnds[0], childEnds[1], childEnds[2])
        guard monitored else {
            return try PosixSpawnProcess(
                loop: loop, argv: spec.argv, environment: environment, cwd: spec.cwd, stdio: stdio, onExit: onExit)
        }
        return try PosixSpawnProcess(
            loop: loop, executable: StepMonitor.executable,
            argv: StepMonitor.arguments(for: spec.argv, graceMilliseconds: spec.killGraceMilliseconds,
                                        files: spec.outputFiles, limit: spec.outputLimit),
            environment: environment, cwd: spec.cwd, stdio: stdio, onExit: onExit)
    }

    /// SIGTERM to the process group now, SIGKILL to the group after
    /// `graceMilliseconds`. The SIGKILL is sent even if the leader has gone
    /// by then, since grandchildren may remain in its group. A monitor
    /// passes the SIGTERM on to all its command started and kills them after
    /// the grace itself; its own SIGKILL comes ``StepMonitor/backstopMilliseconds``
    /// later, only for a monitor that has not ended by then.
    func terminate(graceMilliseconds: UInt64) {
        guard onExit != nil else { return }
        let pid = self.pid
        _ = Glibc.kill(-pid, SIGTERM)
        guard let timer = try? UVTimer(loop: loop) else {
            forceKill()
            return
        }
        let kill = monitored ? graceMilliseconds + StepMonitor.backstopMilliseconds : graceMilliseconds
        timer.start(afterMilliseconds: kill) { [timer] in
            _ = Glibc.kill(-pid, SIGKILL)
            timer.close()
        }
    }

    /// Kills the command and all it started at once: SIGUSR1 to its monitor,
    /// which does it and then ends; without a monitor, SIGKILL to the group.
    func forceKill() {
        _ = Glibc.kill(monitored ? pid : -pid, monitored ? SIGUSR1 : SIGKILL)
    }

    /// Lets go of a monitor that outlives the daemon (its step is settled
    /// by the next one, ``StepOutputFiles``): the pipes and the exit watch
    /// are closed, it is no longer among the processes the daemon stops
    /// or waits for, and `onExit` is never called. A process that is not a
    /// monitor is not let go of.
    func leaveRunning() {
        guard monitored, onExit != nil else { return }
        onExit = nil
        onOutput = nil
        closeHandles()
        onFinished(self)
    }

    /// Closes the grace timer, the pipes and the exit watch.
    private func closeHandles() {
        graceTimer?.close()
        graceTimer = nil
        stdout.close()
        stderr.close()
        stdin.close()
        process.close()
    }

    private func feedStdin(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else {
            stdin.close()
            return
        }
        bytes.withUnsafeBytes { stdinBytes.append($0) }
        do {
            // `self` keeps the buffer alive until the write completes or is cancelled.
            try stdin.write(stdinBytes.bytes) { [stdin] _ in
                stdin.close()  // EOF for the child; EPIPE (it did not read) is not an error
            }
        } catch {
            stdin.close()
        }
    }

    private func startReading(_ pipe: UVPipe, _ keep: @escaping (UnsafeRawBufferPointer) -> Void) {
        do {
            try pipe.startReading(onRead: keep, onEnd: { [unowned self] _ in outputEnded(pipe) })
        } catch {
            outputEnded(pipe)
        }
    }

    private func keepStdout(_ bytes: UnsafeRawBufferPointer) {
        onOutput?(.stdout, bytes)
        let room = limit - stdoutBytes.count
        if bytes.count > room {
            if room > 0 { stdoutBytes.append(contentsOf: bytes.prefix(room)) }
            if !stdoutTruncated {
                stdoutTruncated = true
                if exit == nil { forceKill() }
            }
        } else {
            stdoutBytes.append(contentsOf: bytes)
        }
    }

    private func keepStderr(_ bytes: UnsafeRawBufferPointer) {
        onOutput?(.stderr, bytes)
        stderrBytes.append(contentsOf: bytes)
        // Trim in large steps so that keeping the tail stays linear.
        if stderrBytes.count > 2 * limit + 4096 {
            stderrBytes.removeFirst(stderrBytes.count - limit)
        }
    }

    private func outputEnded(_ pipe: UVPipe) {
        pipe.close()
        openOutputs -= 1
        if openOutputs == 0, exit != nil { finish() }
    }

    private func processExited(status: Int64, signal: Int32) {
        exit = (status, signal)
        if openOutputs == 0 {
            finish()
            return
        }
        graceTimer = try? UVTimer(loop: loop)
        if let graceTimer {
            graceTimer.start(afterMilliseconds: Self.outputGraceMilliseconds) { [unowned self] in finish() }
        } else {
            finish()
        }
    }

    private func finish() {
        guard let exit, let onExit else { return }
        self.onExit = nil
        closeHandles()
        if stderrBytes.count > limit {
            stderrBytes.removeFirst(stderrBytes.count - limit)
        }
        let outcome = ProcessOutcome(
            exitStatus: exit.signal != 0 ? 128 + exit.signal : Int32(truncatingIfNeeded: exit.status),
            signal: exit.signal != 0 ? exit.signal : nil,
            stdout: stdoutBytes,
            stderr: stderrBytes,
            stdoutTruncated: stdoutTruncated)
        stdoutBytes = []
        stderrBytes = []
        onOutput = nil
        onFinished(self)
        onExit(outcome)
    }
}

@available(*, unavailable)
extension ChildProcess: Sendable {}

/// The started process, however it was started.
private enum StartedProcess {
    case posixSpawn(PosixSpawnProcess)
    case uvSpawn(UVProcess)

    var pid: Int32 {
        switch self {
        case .posixSpawn(let process): process.pid
        case .uvSpawn(let process): process.pid
        }
    }

    func close() {
        switch self {
        case .posixSpawn(let process): process.close()
        case .uvSpawn(let process): process.close()
        }
    }
}
