import ArgumentParser
import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// One `promisectl run`: start the command, pass its output through, watch the
/// promise for cancellation, then settle it from the command's outcome.
///
/// Everything happens on one thread in a `poll(2)` loop over the command's two
/// pipes, its pidfd and the daemon's socket, so no state is shared between
/// threads. The pidfd wakes the loop when the command exits: its pipes close
/// a moment before it can be reaped, so without the pidfd only the 50 ms
/// poll timeout would notice the exit.
final class RunSession {
    /// The daemon, reconnected when it goes away (RunSession+Reconnect.swift).
    let connection: ReconnectingPromiseClient
    var client: BlockingPromiseClient { connection.client }
    let id: String
    let command: [String]
    private let grace: Duration
    /// The longest one poll waits, in milliseconds: how late forwarded signals
    /// and the KILL after `grace` can be, and the command's end where there is
    /// no pidfd.
    private let pollMilliseconds: Int32

    /// Stdout kept for the value; past this the command still runs and its
    /// output still passes through, but the promise is rejected. The daemon's
    /// `maxProcessOutputBytes` (read when stdout is large) is the real bound.
    private let maxCapturedBytes = 64 << 20
    /// How much of the end of stderr goes into a rejection's message.
    private let stderrTailBytes = 2_000
    /// Signals passed on to the command's group.
    private let forwardedSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    private var captured: [UInt8] = []
    /// Every read of the command's output lands here: allocated once and
    /// never zeroed (`read` fills what it returns), not a fresh zeroed
    /// 64 KiB array per read (docs/PERFORMANCE.md).
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
    private var capturedOverflow = false
    private var stderrTail: [UInt8] = []
    var cancelled = false
    private var killDeadline: ContinuousClock.Instant?
    var daemonGone = false
    /// Set when the outcome could not be given to the daemon (said on
    /// stderr): no more tries, and `run` exits 69 rather than with the
    /// command's status. The promise's lease ends it at the daemon.
    var outcomeLost = false
    private var askedLimits: JSONValue??
    /// The command's output, sent to the daemon as the step's log.
    private let log: RunLogShipper
    /// The daemon's pool whose slot the command waits for and holds (`run --pool`).
    private let pool: String?
    /// That slot, taken again on each new connection while the command runs.
    var slot: PoolSlotClaim?
    /// True from the command's start to its end: the time a pool slot is due.
    var commandRunning = false
    /// How many more times a command that fails runs (`run --retry`).
    private let retries: Int

    init(client: BlockingPromiseClient, id: String, command: [String], grace: Duration, pollTimeout: Duration = .milliseconds(50),
         pool: String? = nil, reconnect: ReconnectPolicy = .never, retries: Int = 0) {
        self.connection = ReconnectingPromiseClient(adopting: client, policy: reconnect)
        self.retries = retries
        self.pool = pool
        self.id = id
        self.command = command
        self.grace = grace
        self.pollMilliseconds = Int32(min(pollTimeout / .milliseconds(1), Double(Int32.max)))
        let connection = self.connection
        log = RunLogShipper(client: { connection.client }, id: id)
        connection.onReconnect = { [unowned self] in
            log.reconnected()
            try self.resume(on: $0)
            try self.reclaimSlot(on: $0)
        }
    }

    /// Runs the command to its end and returns its shell status.
    deinit {
        readBuffer.deallocate()
    }

    func run() throws -> Int32 {
        // Leased: if promisectl dies without settling, the daemon rejects the promise
        // instead of leaving it pending forever, whether this run created it or not.
        // Subscribing before the command starts means a cancel cannot slip in unseen. The
        // lease and the subscription go with the create, in one round trip: the daemon
        // answers them in order, and for a promise that turns out to be settled they do no harm.
        let record = try connection.withReconnects { client in
            let created = try client.send("create", ["id": .string(id), "ifExists": "get", "lease": true])
            let resumed = try sendResume(on: client)
            let record = try BlockingPromiseClient.Record(client.result(for: created))
            try finishResume(resumed, on: client)
            return record
        }
        guard record.state == .pending else {
            Failure.report("\(id) is already \(record.state.rawValue); not running \(command[0])")
            throw ExitCode.alreadySettledOrExists
        }
        // Before signals are held: a promisectl interrupted while it waits just ends, and its turn with it.
        // A restart of the daemon meanwhile ends that turn with the connection: the wait starts again on the
        // new one, at the back of the queue.
        slot = try pool.map { pool in try connection.withReconnects { try PoolSlotClaim.acquire(pool: pool, for: id, on: $0) } }
        // Given back once the command has ended, however it ended (a killed promisectl's connection closes,
        // and with it the slot). After a restart of the daemon, the slot taken again on the new connection.
        defer { if !daemonGone { slot?.release(on: client) } }

        var blocked = sigset_t()
        sigemptyset(&blocked)
        for signal in forwardedSignals { sigaddset(&blocked, signal) }
        var previousMask = sigset_t()
        sigprocmask(SIG_BLOCK, &blocked, &previousMask)
        defer { sigprocmask(SIG_SETMASK, &previousMask, nil) }

        var termination: ProcessGroupChild.Termination
        var attempt = 1
        while true {
            let child: ProcessGroupChild
            do {
                commandRunning = true
                child = try ProcessGroupChild(arguments: command, defaultSignals: forwardedSignals + [SIGPIPE])
            } catch let error as SpawnError {
                commandRunning = false
                Failure.report(error.description)
                return settle(.rejected(code: Int(error.shellStatus), message: error.description))?.rawValue
                    ?? error.shellStatus
            }
            termination = try supervise(child, forwarding: blocked)
            commandRunning = false
            guard !cancelled, attempt <= retries, termination.shellStatus != 0 else { break }
            attempt += 1
            Failure.report("\(command[0]) failed (status \(termination.shellStatus)); running it again, "
                + "try \(attempt) of \(retries + 1)")
            // Each run's output makes its own value and message.
            captured = []
            capturedOverflow = false
            stderrTail = []
        }
        if cancelled {
            Failure.report("\(id) was cancelled; stopped \(command[0])")
            // A command that ended well all the same did not settle ID: the cancellation did.
            return termination.shellStatus == 0 ? ExitCode.cancelled.rawValue : termination.shellStatus
        }
        let outcome = outcome(of: termination)
        if let status = settle(outcome) { return status.rawValue }
        if case .rejected = outcome, termination.shellStatus == 0 { return ExitCode.rejected.rawValue }
        return termination.shellStatus
    }

    // MARK: The loop

    private func supervise(_ child: ProcessGroupChild, forwarding signals: sigset_t) throws -> ProcessGroupChild.Termination {
        var signals = signals
        var exitedAt: ContinuousClock.Instant?
        while true {
            if child.reapIfExited() != nil, exitedAt == nil { exitedAt = .now }
            let pipesOpen = child.standardOutput >= 0 || child.standardError >= 0
            // Output still held open by a background grandchild must not keep us forever.
            if let termination = child.termination,
                !pipesOpen || ContinuousClock.now - exitedAt! > .seconds(2)
            {
                return termination
            }

            var descriptors: [pollfd] = []
            if child.standardOutput >= 0 { descriptors.append(pollfd(fd: child.standardOutput, events: Int16(POLLIN), revents: 0)) }
            if child.standardError >= 0 { descriptors.append(pollfd(fd: child.standardError, events: Int16(POLLIN), revents: 0)) }
            if !daemonGone { descriptors.append(pollfd(fd: client.fileDescriptor, events: Int16(POLLIN), revents: 0)) }
            if child.exitDescriptor >= 0 { descriptors.append(pollfd(fd: child.exitDescriptor, events: Int16(POLLIN), revents: 0)) }
            let wait = client.hasQueuedNotifications ? 0 : pollMilliseconds
            _ = poll(&descriptors, nfds_t(descriptors.count), wait)

            for descriptor in descriptors where descriptor.revents != 0 {
                if descriptor.fd == child.standardOutput {
                    pump(child.standardOutput, to: 1, stdout: true) { child.closeStandardOutput() }
                } else if descriptor.fd == child.standardError {
                    pump(child.standardError, to: 2, stdout: false) { child.closeStandardError() }
                }
            }
            if daemonGone { reconnectIfDue() }
            if !daemonGone { drainNotifications(child) }
            if !daemonGone { checkReclaimedSlot() }
            if !daemonGone { log.sendIfDue() }
            forwardPendingSignals(&signals, to: child)
            if let killDeadline, ContinuousClock.now >= killDeadline {
                child.signalGroup(SIGKILL)
                self.killDeadline = nil
            }
        }
    }

    /// Copies what is available from `fd` to `target`, keeping what settling needs.
    private func pump(_ fd: Int32, to target: Int32, stdout: Bool, onEnd: () -> Void) {
        let count = read(fd, readBuffer.baseAddress!, readBuffer.count)
        if count < 0 && (errno == EINTR || errno == EAGAIN) { return }
        if count <= 0 {
            onEnd()
            return
        }
        let chunk = Array(UnsafeRawBufferPointer(rebasing: readBuffer[..<count]))[...]
        writeAll(chunk, to: target)
        log.add(chunk, stream: stdout ? .stdout : .stderr)
        if stdout {
            if captured.count + count <= maxCapturedBytes {
                captured.append(contentsOf: chunk)
            } else {
                capturedOverflow = true
            }
        } else {
            stderrTail.append(contentsOf: chunk)
            if stderrTail.count > stderrTailBytes * 2 { stderrTail.removeFirst(stderrTail.count - stderrTailBytes) }
        }
    }

    private func writeAll(_ bytes: ArraySlice<UInt8>, to fd: Int32) {
        var remaining = bytes
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return  // our own stdout is gone (closed pipe): keep capturing, stop copying
            }
            remaining = remaining.dropFirst(written)
        }
    }

    private func drainNotifications(_ child: ProcessGroupChild) {
        do {
            while let notification = try client.nextNotification(timeout: .zero) {
                guard notification.method == "settled", notification.params["id"]?.stringValue == id,
                    notification.params["state"]?.stringValue == "cancelled", !cancelled
                else { continue }
                cancelled = true
                child.signalGroup(SIGTERM)
                child.signalGroup(SIGCONT)
                killDeadline = .now + grace
            }
        } catch {
            lostDaemon(error)
        }
    }

    private func forwardPendingSignals(_ signals: inout sigset_t, to child: ProcessGroupChild) {
        var pending = sigset_t()
        sigpending(&pending)
        for signal in forwardedSignals where sigismember(&pending, signal) == 1 {
            var one = sigset_t()
            sigemptyset(&one)
            sigaddset(&one, signal)
            var zero = timespec(tv_sec: 0, tv_nsec: 0)
            if sigtimedwait(&one, nil, &zero) == signal { child.signalGroup(signal) }
        }
    }

    // MARK: Settling

    enum Outcome {
        case fulfilled(JSONValue)
        case rejected(code: Int, message: String, data: JSONValue? = nil)
    }

    private func outcome(of termination: ProcessGroupChild.Termination) -> Outcome {
        let tail = stderrTailText()
        switch termination {
        case .exited(0):
            if let reason = stdoutOverLimit() { return rejecting(reason) }
            if let value = try? JSONValue(parsing: captured) { return .fulfilled(value) }
            return .fulfilled(.string(ValueInput.droppingTrailingNewline(captured)))
        case .exited(let status):
            return .rejected(code: Int(status), message: tail.isEmpty ? "\(command[0]) exited with status \(status)" : tail)
        case .signalled(let signal):
            let text = "\(command[0]) was killed by signal \(signal)"
            return .rejected(code: Int(128 + signal), message: tail.isEmpty ? text : tail)
        }
    }

    /// Stdout over the daemon's `maxProcessOutputBytes` rejects the step even
    /// though its command succeeded, as it does a `then … exec` step.
    private func stdoutOverLimit() -> RemoteRejection? {
        guard capturedOverflow || !captured.isEmpty else { return nil }
        let limit = min(daemonLimits()?["maxProcessOutputBytes"]?.intValue ?? DaemonLimits().maxProcessOutputBytes,
                        maxCapturedBytes)
        guard capturedOverflow || captured.count > limit else { return nil }
        return .stdoutTooLarge(limit: limit)
    }

    /// Says on stderr why a command that succeeded fails its step, and rejects it with `reason`.
    private func rejecting(_ reason: RemoteRejection) -> Outcome {
        Failure.report("rejecting \(id) although \(command[0]) exited 0: \(reason.message)")
        return .rejected(code: reason.code ?? 0, message: reason.message, data: reason.data)
    }

    private func stderrTailText() -> String {
        let tail = stderrTail.suffix(stderrTailBytes)
        return String(decoding: tail, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Settles the promise, on a new connection if the daemon went away.
    ///
    /// - Returns: nil when the promise settled as `outcome` says; else what
    ///   `run` exits with instead of the command's status, the reason said on
    ///   stderr: 1 when a fulfilment was turned into a rejection (stdout too
    ///   long for one request), 69 when the daemon is gone or did not come
    ///   back in time, the daemon's error's status otherwise (5: already
    ///   settled by someone else).
    private func settle(_ outcome: Outcome) -> ExitCode? {
        guard reconnectToSettle() else { return .daemonUnreachable }
        // On the connection that settles, so that the log is whole first (also what came while the daemon was gone).
        log.sendAll()
        do {
            switch outcome {
            case .fulfilled(let value):
                let size = value.serialized().count
                if !captured.isEmpty, let limit = daemonLimits()?["maxLineBytes"]?.intValue, size + 1_024 > limit {
                    // Under maxProcessOutputBytes, but escaped as JSON it does not fit in one request.
                    return settle(rejecting(RemoteRejection(
                        code: RPCError.Code.limitExceeded.rawValue,
                        message: "stdout is too large to send as a value (\(size) bytes of JSON; the daemon's "
                            + "maxLineBytes is \(limit): promised --max-line-bytes sets it)",
                        data: ["limit": "maxLineBytes", "value": .int(limit), "exitStatus": 0]))) ?? .rejected
                }
                try settleReconnecting("resolve", ["id": .string(id), "value": value])
            case .rejected(let code, let message, let data):
                var reason: [String: JSONValue] = ["code": .int(code), "message": .string(message)]
                if let data { reason["data"] = data }
                try settleReconnecting("reject", ["id": .string(id), "reason": .object(reason)])
            }
        } catch {
            Failure.report("could not settle \(id): \(error)")
            if ReconnectingPromiseClient.isConnectionLoss(error) {
                outcomeLost = true
                return .daemonUnreachable
            }
            switch error {
            case let error as RPCError: return ExitCode(rpcError: error)
            case let error as PromiseClientError: return ExitCode(clientError: error)
            default: return .internalError
            }
        }
        return nil
    }

    /// The daemon's limits, asked once, and only when the command wrote to stdout;
    /// nil when the daemon does not answer.
    private func daemonLimits() -> JSONValue? {
        if let askedLimits { return askedLimits }
        let limits = try? client.call("info")["limits"]
        askedLimits = .some(limits)
        return limits
    }
}
