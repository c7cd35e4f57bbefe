import PromiseJSON
import PromiseModel
import PromiseStore

/// Step logs: the last `maxLogBytes` of each step's stdout and of its stderr
/// (docs/PROTOCOL.md, "Logs").
///
/// A `then … exec` child's log is filled by the daemon as its command writes;
/// a `promisectl run` step's by the `log` method, which any client may call
/// on a pending promise. `logs` reads one, and with `follow` sends each new
/// chunk to the caller as a `log` notification until the promise settles.
///
/// Durable registries write a log with the commit that settles its promise,
/// and a running step's log at most once per ``logSaveMilliseconds`` in
/// between: no commit (and so no fsync) per chunk of output, and at most
/// twice `maxLogBytes` per step per write. A log goes with its promise
/// (forget, retention).
extension Registry {
    /// How long new output of a pending step may wait before it is written
    /// to the store: what a crash of the daemon may lose of a running step's log.
    static let logSaveMilliseconds: UInt64 = 1_000

    // MARK: Filling

    /// Adds a chunk of `stream` to the log of promise `id`, made with
    /// `sequence` (an id forgotten and made again is another promise), and
    /// sends it to those following the log. Nothing happens once the
    /// promise has settled or is gone.
    func appendLog(_ id: String, sequence: Int, _ stream: StepStream, _ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, let entry = entries[id], entry.sequence == sequence else { return }
        append(to: entry, stream, bytes, skipped: 0)
    }

    /// Completes the log of `entry`, a step whose command ran (in part)
    /// while no daemon read its output, from what its monitor kept
    /// (``StepOutputFiles``): `outcome.stdout` is the start of its stdout,
    /// `outcome.stderr` the end of the `stderrTotal` bytes of its stderr.
    /// Only what the log does not have yet is added; a gap between the two
    /// counts as skipped.
    func appendWrittenOutput(of entry: RemotePromise, _ outcome: ProcessOutcome, stderrTotal: Int) {
        let log = logBook.logs[entry.id].flatMap { $0.sequence == entry.sequence ? $0 : nil }
        let seenStdout = log?.stdout.total ?? 0
        if seenStdout < outcome.stdout.count {
            outcome.stdout[seenStdout...].withUnsafeBytes { append(to: entry, .stdout, $0, skipped: 0) }
        }
        let seenStderr = log?.stderr.total ?? 0
        let keptFrom = stderrTotal - outcome.stderr.count
        guard seenStderr < stderrTotal else { return }
        let skipped = max(0, keptFrom - seenStderr)
        outcome.stderr[max(0, seenStderr - keptFrom)...].withUnsafeBytes { append(to: entry, .stderr, $0, skipped: skipped) }
    }

    private func append(to entry: RemotePromise, _ stream: StepStream, _ bytes: UnsafeRawBufferPointer, skipped: Int) {
        let log = stepLog(of: entry)
        if !log.followers.isEmpty { tellFollowers(log, entry.id, stream, bytes, skipped: skipped) }
        let held = log.heldBytes
        log.append(stream, bytes, skipped: skipped)
        logBook.heldBytes += log.heldBytes - held
        markUnsaved(log, entry.id)
        if logBook.heldBytes > limits.maxTotalLogBytes { keepLogsWithinBudget(appendingTo: log, entry.id) }
    }

    /// Notes that `log` has output the store does not have yet.
    private func markUnsaved(_ log: StepLogs, _ id: String) {
        guard journal != nil && !log.unsaved else { return }
        log.unsaved = true
        logBook.unsaved.append(id)
        scheduleLogSave()
    }

    /// Brings the bytes all logs hold back within `maxTotalLogBytes`: the
    /// logs of settled steps let go of their output first, those that
    /// settled longest ago first; if that is not enough, so does `current`,
    /// the log just written to. A log let go of keeps its counts, its bytes
    /// counting as dropped (`logs` says it was cut), and the store is given
    /// the emptied log. Without it, a client that writes to the logs of a
    /// million pending promises, or a day of steps kept by `--retain`, could
    /// hold 128 KiB each in memory.
    private func keepLogsWithinBudget(appendingTo current: StepLogs, _ currentID: String) {
        evictSettledLogsPastBudget()
        if logBook.heldBytes > limits.maxTotalLogBytes { evict(current, currentID) }
    }

    /// Lets the logs of settled steps go, those that settled first first,
    /// until all logs are within `maxTotalLogBytes` or none is left to let go.
    private func evictSettledLogsPastBudget() {
        while logBook.heldBytes > limits.maxTotalLogBytes, logBook.settledStart < logBook.settled.count {
            let (id, sequence) = logBook.settled[logBook.settledStart]
            logBook.settledStart += 1
            guard let log = logBook.logs[id], log.sequence == sequence else { continue }
            evict(log, id)
        }
        if logBook.settledStart > 1024 && logBook.settledStart * 2 > logBook.settled.count {
            logBook.settled.removeFirst(logBook.settledStart)
            logBook.settledStart = 0
        }
    }

    private func evict(_ log: StepLogs, _ id: String) {
        logBook.heldBytes -= log.heldBytes
        log.dropKept()
        markUnsaved(log, id)
    }

    /// The log of `entry`, made empty at its first output.
    private func stepLog(of entry: RemotePromise) -> StepLogs {
        if let log = logBook.logs[entry.id] { return log }
        let log = StepLogs(sequence: entry.sequence, limit: limits.maxLogBytes)
        logBook.logs[entry.id] = log
        return log
    }

    /// Sends `bytes` to each follower of `log` as a `log` notification, as
    /// UTF-8 text: without the end of a character cut by the chunk (it goes
    /// with the next chunk), invalid bytes replaced by U+FFFD. `offset` is
    /// where the text's first byte is in the stream.
    private func tellFollowers(
        _ log: StepLogs, _ id: String, _ stream: StepStream, _ bytes: UnsafeRawBufferPointer, skipped: Int
    ) {
        let carry = skipped > 0 ? [] : log.carry(stream)
        var text = carry
        text.append(contentsOf: bytes)
        text.removeLast(UTF8Boundary.incompleteSuffixLength(text))
        guard !text.isEmpty else { return }
        let event = RegistryEvent.log(
            id: id, stream: stream, text: String(decoding: text, as: UTF8.self),
            offset: log[stream].total.saturatingAdd(skipped) - carry.count)
        events?.send(event, to: log.followers.values)
    }

    // MARK: Methods

    /// `log` → `{"stdoutBytes","stderrBytes"}`:
    /// adds output to a pending promise's log (`promisectl run` sends its
    /// command's output this way).
    package func log(_ command: LogCommand) throws(RegistryError) -> LogTotals {
        let id = command.id
        let entry = try entry(id)
        guard entry.isPending else { throw alreadySettled(entry) }
        Array(command.data.utf8).withUnsafeBytes { append(to: entry, command.stream, $0, skipped: command.skipped) }
        let log = logBook.logs[id]
        return LogTotals(stdoutBytes: log?.stdout.total ?? 0, stderrBytes: log?.stderr.total ?? 0)
    }

    /// `logs` → the log of the promise (see ``logAnswer(_:)``).
    /// With `follow` and a pending promise, each chunk written from now on
    /// is sent to this connection as a `log` notification, until the
    /// promise settles or the connection closes.
    package func logs(_ query: LogsQuery, _ call: RegistryCall) throws(RegistryError) -> LogSnapshot {
        let id = query.id
        let entry = try entry(id)
        guard query.follow, entry.isPending, call.expectsAnswer else { return logAnswer(entry) }
        let session = try session(call.connectionID)
        if session.peer.isReserved { throw reserveRefusal("follow logs", closing: session.peer) }
        if logBook.logs[id]?.followers[call.connectionID] == nil {
            guard logBook.follows[call.connectionID]?.count ?? 0 < limits.maxSubscriptionsPerConnection else {
                throw .limitExceeded(.logsFollowedOnConnection(limits.maxSubscriptionsPerConnection))
            }
            logBook.follows[call.connectionID, default: []].insert(id)
            stepLog(of: entry).followers[call.connectionID] = session
        }
        return logAnswer(entry)
    }

    /// The log of `entry` as it stands. While the promise is pending, a
    /// character whose end has not come yet is left out (it comes in the
    /// next `log` event).
    func logAnswer(_ entry: RemotePromise) -> LogSnapshot {
        let log = logBook.logs[entry.id]
        func stream(_ stream: StepStream) -> LogSnapshot.Stream {
            let kept = log?[stream]
            var bytes = kept?.bytes ?? []
            if entry.isPending, let log { bytes.removeLast(min(bytes.count, log.carry(stream).count)) }
            return LogSnapshot.Stream(
                text: String(decoding: bytes, as: UTF8.self), dropped: kept?.dropped ?? 0, total: kept?.total ?? 0)
        }
        return LogSnapshot(
            id: entry.id, state: entry.state, stdout: stream(.stdout), stderr: stream(.stderr),
            limit: log?.stdout.limit ?? limits.maxLogBytes)
    }

    // MARK: Settling, dropping, disconnecting

    /// `entry` settled: its log has no more followers, and is among the
    /// first to let go of its output when logs pass their memory budget.
    func logSettled(_ entry: RemotePromise) {
        guard let log = logBook.logs[entry.id], log.sequence == entry.sequence else { return }
        logBook.settled.append((entry.id, entry.sequence))
        guard !log.followers.isEmpty else { return }
        for connectionID in log.followers.keys { logBook.stopFollowing(entry.id, connectionID) }
        log.followers = [:]
    }

    /// `entry` is dropped (forget, retention): so is its log.
    func dropLog(_ entry: RemotePromise) {
        guard let log = logBook.logs[entry.id], log.sequence == entry.sequence else { return }
        // `remove` settles what it drops first, and a settled log has no followers (`logSettled`).
        assert(log.followers.isEmpty, "\(entry.id): a log is dropped while followed")
        logBook.heldBytes -= log.heldBytes
        logBook.logs[entry.id] = nil
    }

    /// Connection `connectionID` closed: it follows no log any more.
    func stopFollowingLogs(_ connectionID: UInt64) {
        guard let ids = logBook.follows.removeValue(forKey: connectionID) else { return }
        for id in ids { logBook.logs[id]?.followers[connectionID] = nil }
    }

    // MARK: Durability

    /// Saves the logs of pending steps that have new output, at most once
    /// per ``logSaveMilliseconds``.
    private func scheduleLogSave() {
        guard logBook.saveTimer == nil else { return }
        logBook.saveTimer = services.schedule(afterMilliseconds: Self.logSaveMilliseconds) { [weak self] in
            guard let self else { return }
            logBook.saveTimer = nil
            saveUnsavedLogs()
        }
    }

    /// Writes every log with unsaved output, in a commit of its own.
    func saveUnsavedLogs() {
        let ids = logBook.unsaved
        logBook.unsaved = []
        var logs: [StoredStepLog] = []
        for id in ids {
            guard let log = logBook.logs[id], log.unsaved else { continue }
            log.unsaved = false
            logs.append(log.stored(id: id))
        }
        journal?.write(logs: logs)
    }

    /// The logs to write with a cut that writes `ids`: those with unsaved
    /// output whose promise settled, so that a settlement and its log's
    /// end are stored in one transaction.
    func storedLogs(_ ids: [String]) -> [StoredStepLog] {
        guard !logBook.unsaved.isEmpty else { return [] }
        var logs: [StoredStepLog] = []
        for id in ids {
            guard let log = logBook.logs[id], log.unsaved, let entry = entries[id], !entry.isPending,
                  entry.sequence == log.sequence
            else { continue }
            log.unsaved = false
            logs.append(log.stored(id: id))
        }
        if !logs.isEmpty { logBook.unsaved.removeAll { logBook.logs[$0]?.unsaved != true } }
        return logs
    }

    /// Puts back the logs a store kept, on the promises restored.
    func restoreLogs(_ stored: [StoredStepLog]) {
        var settled: [(id: String, sequence: Int)] = []
        for saved in stored {
            guard let entry = entries[saved.id], entry.sequence == saved.sequence else { continue }
            let log = StepLogs(saved, limit: limits.maxLogBytes)
            logBook.logs[saved.id] = log
            logBook.heldBytes += log.heldBytes
            if !entry.isPending { settled.append((saved.id, saved.sequence)) }
        }
        // Settled longest ago first, as far as a restart can tell: in creation order.
        logBook.settled += settled.sorted { $0.sequence < $1.sequence }
        evictSettledLogsPastBudget()
    }
}

/// The step logs of a registry, and who follows them. Loop thread only.
final class StepLogBook {
    /// By promise id; a log's ``StepLogs/sequence`` tells which promise of that id.
    /// `@exclusivity(unchecked)` as the registry's maps are: every settlement
    /// asks whether it is empty, a runtime check each time.
    @exclusivity(unchecked) var logs = PromiseMap<StepLogs>()
    /// Ids whose log has output not yet written to the store, in order.
    var unsaved: [String] = []
    var saveTimer: (any ScheduledTimer)?
    /// The logs each connection follows.
    var follows: [UInt64: PromiseIDSet] = [:]
    /// Bytes of output all logs hold (``StepLogs/heldBytes``), kept within `maxTotalLogBytes`.
    var heldBytes = 0
    /// Logs whose promise has settled, in the order they settled, from
    /// `settledStart` on: the first to let go of their output.
    var settled: [(id: String, sequence: Int)] = []
    var settledStart = 0

    var isEmpty: Bool { logs.isEmpty }

    func stopFollowing(_ id: String, _ connectionID: UInt64) {
        follows[connectionID]?.remove(id)
        if follows[connectionID]?.count == 0 { follows[connectionID] = nil }
    }
}

/// One promise's log: the tails of its two streams, the bytes held back
/// from notifications because they end inside a character, and who follows
/// it. Memory: at most twice the stream limit, plus six bytes.
final class StepLogs {
    let sequence: Int
    private(set) var stdout: StepLog
    private(set) var stderr: StepLog
    /// The end of the last chunk of each stream, when it stopped inside a
    /// character: at most 3 bytes each.
    private var stdoutCarry: [UInt8] = []
    private var stderrCarry: [UInt8] = []
    var followers: [UInt64: RegistrySession] = [:]
    /// Has output the store does not have yet.
    var unsaved = false

    init(sequence: Int, limit: Int) {
        self.sequence = sequence
        stdout = StepLog(limit: limit)
        stderr = StepLog(limit: limit)
    }

    /// A log as a store kept it.
    init(_ stored: StoredStepLog, limit: Int) {
        sequence = stored.sequence
        stdout = StepLog(limit: limit, bytes: stored.stdout, dropped: stored.stdoutDropped)
        stderr = StepLog(limit: limit, bytes: stored.stderr, dropped: stored.stderrDropped)
    }

    subscript(stream: StepStream) -> StepLog {
        stream == .stdout ? stdout : stderr
    }

    /// Output bytes it holds, both streams.
    var heldBytes: Int { stdout.count + stderr.count }

    /// Lets go of the output it holds; the counts remain (it reads as cut).
    func dropKept() {
        stdout.dropKept()
        stderr.dropKept()
        stdoutCarry = []
        stderrCarry = []
    }

    func carry(_ stream: StepStream) -> [UInt8] {
        stream == .stdout ? stdoutCarry : stderrCarry
    }

    /// Adds a chunk in place (a copy of the ring per chunk would cost its size).
    func append(_ stream: StepStream, _ bytes: UnsafeRawBufferPointer, skipped: Int) {
        let carry = skipped > 0 ? [] : self.carry(stream)
        let tail = Array((carry + bytes.suffix(4)).suffix(4))
        let nextCarry = Array(tail.suffix(UTF8Boundary.incompleteSuffixLength(tail)))
        switch stream {
        case .stdout:
            stdout.skip(skipped)
            stdout.append(bytes)
            stdoutCarry = nextCarry
        case .stderr:
            stderr.skip(skipped)
            stderr.append(bytes)
            stderrCarry = nextCarry
        }
    }

    func stored(id: String) -> StoredStepLog {
        StoredStepLog(id: id, sequence: sequence, stdout: stdout.bytes, stderr: stderr.bytes,
                      stdoutDropped: stdout.dropped, stderrDropped: stderr.dropped)
    }
}

@available(*, unavailable)
extension StepLogBook: Sendable {}

@available(*, unavailable)
extension StepLogs: Sendable {}
