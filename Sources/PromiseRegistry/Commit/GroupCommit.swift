import Logging
import Promise
import PromiseStore

/// Makes the registry's changes durable without ever blocking the loop, and
/// holds back every message that reveals a change until that change is
/// stored (docs/DURABILITY.md).
///
/// The registry ``touch(_:)``es the id of each promise it changes, and tells
/// ``remove(_:)`` each promise it drops. The first change schedules a *cut*
/// for the end of the current loop turn, so all that one read of one
/// connection did — every line, every batch member, every promise settled
/// along the way — lands in one cut. A cut holds the promises as they are
/// then (``snapshot``: a promise touched ten times in a turn is written
/// once) and goes to the ``CommitQueue``. The writer executor commits what
/// is queued in one transaction with one fsync, then at once takes all that
/// was cut meanwhile as its next batch: under load, batches grow and the
/// fsyncs per change fall, and the disk never waits for the loop.
///
/// Answers and notifications go through ``deliver(_:)``, which runs them
/// once everything touched before them is committed, in the order they were
/// given. A batch that cannot be written (the store throws: a full disk, an
/// I/O error) is reported to what it held back, and the store is *failing*:
/// its changes are kept and retried every second, messages are no longer
/// held (reads keep working), and ``failure`` tells the dispatcher to refuse
/// changes until a retry succeeds.
///
/// A change the store refuses for good (too big, a constraint) is another
/// matter: the store commits the rest of the batch and returns it, and only
/// the messages that depend on it get an error; the store is not failing.
/// Which messages depend on which change is read from the order of calls,
/// all on the loop thread: the ids touched (or removed) since the previous
/// ``deliver(_:)`` are what the request answered by this message changed,
/// since a request's settlements, cascades included, are touched before its
/// answer is given (past the core's drain budget a cascade goes on in later
/// turns: what it changes then is made by no request, as below). A change made by no request (a timeout, a command's
/// exit) falls to the next message given before its batch is committed —
/// its `settled` notification, usually — so such a message may get an error
/// for a change it did not make: never the other way round. That rests on
/// nothing else being given while a request runs: the registry hops what
/// follows a settlement (notifications, `wait` answers, command starts) to a
/// later turn through its executor, and sends a line's pushes after its answer.
///
/// ```swift
/// let journal = GroupCommit(store: store, loop: loopExecutor, writer: DispatchQueue(label: "store"),
///                           services: services, logger: logger)
/// journal.snapshots = { ids in registry.storedPromises(ids) }
/// journal.touch("build")                      // changed in memory
/// journal.deliver { failure in send(answer) }  // runs once "build" is on disk, or with
///                                             // why it is not (failing store, or "build" refused)
/// ```
///
/// The rules (what a cut holds, which message waits for what, what a
/// failure releases) are ``GroupCommitState``'s; this class does the I/O:
/// it schedules cuts, snapshots, commits on the writer, logs and retries.
/// Loop thread only, except the store's `commit`, which runs on `writer`.
public final class GroupCommit {
    public let store: any PromiseStore
    private let loop: any Executor
    private let writer: any Executor
    private let services: any LoopServices
    private let logger: Logger
    private let queue = CommitQueue()
    /// What to write for the ids changed in a turn: each promise still held,
    /// as it is now (an id gone has only its deletion to write). Asked once
    /// per cut, not per id: each call reaches the registry through an
    /// unowned reference (a slow-path retain, since the registry is also
    /// weakly referenced) and reads the clock.
    var snapshots: ([String]) -> [StoredPromise] = { _ in [] }
    /// The numbers each cut carries for the store to keep from going back
    /// (``StoreBatch/counters``), as they are at the cut.
    var counters: () -> [String: Int] = { [:] }
    /// The step logs to write with a cut, given the ids it writes: those
    /// of the ids that settled (see Registry+Logs.swift).
    var logSnapshots: ([String]) -> [StoredStepLog] = { _ in [] }

    /// Which ids the next cut writes and which messages wait for which
    /// cut. `@exclusivity(unchecked)` for the reason given in `Registry`:
    /// loop thread only, and no access spans a call out of this type.
    @exclusivity(unchecked) private var state = GroupCommitState<(PromiseStoreError?) -> Void>()
    private var retryTimer: (any ScheduledTimer)?
    /// How long a failing store waits before it tries again.
    static let retryMilliseconds: UInt64 = 1000

    /// Why the last commit failed, until one succeeds again.
    public var failure: PromiseStoreError? { state.failure }
    /// Batches committed since start.
    public private(set) var commitCount = 0
    /// Promise writes and deletions committed since start.
    public private(set) var changeCount = 0
    /// Promise writes and deletions the store refused for good since start
    /// (too big, a constraint): each is logged, and left out of its batch.
    public private(set) var unstorableCount = 0
    /// Promises the store set aside because they could not be loaded, as
    /// ``Registry/restore(_:)`` found them.
    public internal(set) var quarantinedCount = 0

    /// - Parameters:
    ///   - loop: Runs work on the loop thread, after the current turn (the daemon's ``LoopExecutor``).
    ///   - writer: Runs commits, one at a time, off the loop thread (a serial `DispatchQueue`).
    ///   - services: For the retry timer of a failing store.
    public init(store: any PromiseStore, loop: any Executor, writer: any Executor,
                services: any LoopServices, logger: Logger) {
        self.store = store
        self.loop = loop
        self.writer = writer
        self.services = services
        self.logger = logger
    }

    /// Notes that promise `id` changed, to be written as it then is in the next cut.
    func touch(_ id: String) {
        if state.touched(id) == .scheduleCut { scheduleCut() }
    }

    /// Notes that a promise is gone, to be deleted from the store in the next
    /// cut. Its id may be made again meanwhile: the new promise has a new
    /// sequence, so the deletion leaves it alone.
    func remove(_ promise: StoreDeletion) {
        if state.removed(promise) == .scheduleCut { scheduleCut() }
    }

    /// Writes these step logs in the next cut, with no promise changed (the
    /// registry's periodic save of running steps' output). Messages given
    /// from now on wait for that cut, as for any change.
    func write(logs: [StoredStepLog]) {
        if state.wrote(logs: logs) == .scheduleCut { scheduleCut() }
    }

    /// Writes this pool limit in the next cut, with no promise changed.
    /// Messages given from now on (the `pool.set` answer) wait for that cut.
    func write(poolLimit: StoredPoolLimit) {
        if state.wrote(poolLimit: poolLimit) == .scheduleCut { scheduleCut() }
    }

    /// Runs `body` once everything touched so far is committed (with nil),
    /// or once its batch has failed (with the reason); at once when nothing
    /// is outstanding, and at once (with nil) while the store is failing, so
    /// that reads are still answered. Bodies run in the order given.
    package func deliver(_ body: @escaping (PromiseStoreError?) -> Void) {
        if case .run(let body, let failure) = state.deliver(body) { body(failure) }
    }

    /// Like ``deliver(_:)``, but while the store is failing `body` gets the
    /// failure at once: for work that must not start before its record is
    /// stored (a `then … exec` command).
    func afterCommit(_ body: @escaping (PromiseStoreError?) -> Void) {
        if case .run(let body, let failure) = state.deliverAfterCommit(body) { body(failure) }
    }

    /// Calls `done` once everything touched so far is committed or has
    /// failed: for a clean shutdown.
    package func flush(_ done: @escaping () -> Void) {
        if case .run = state.flush({ _ in done() }) { done() }
    }

    // MARK: Cutting and committing

    private func scheduleCut() {
        let journal = LoopBound(self)
        loop.execute { journal.value.cut() }
    }

    /// Queues the turn's changes, and starts the writer if it is idle. While
    /// the store is failing, cuts queue up behind the failed batch and wait
    /// for the retry.
    private func cut() {
        guard let cut = state.cut() else { return }
        var logs = cut.ids.isEmpty ? cut.logs : cut.logs + logSnapshots(cut.ids)
        if !cut.removals.isEmpty && !logs.isEmpty {
            // Logs are written after deletions: one of a promise dropped since would outlive it.
            let removed = Set(cut.removals.map(\.sequence))
            logs.removeAll { removed.contains($0.sequence) }
        }
        let batch = StoreBatch(upserts: snapshots(cut.ids), deletions: cut.removals, counters: counters(), logs: logs,
                               poolLimits: cut.poolLimits)
        if queue.add(batch, through: cut.mark) { startWriter() }
    }

    /// Commits batch after batch until nothing is queued, telling the loop
    /// how each went; stops at a failure, leaving the batch queued. Changes
    /// the store refused for good are not queued again.
    private func startWriter() {
        let (queue, store, loop) = (self.queue, self.store, self.loop)
        let journal = LoopBound(self)
        writer.execute {
            while let (batch, through) = queue.next() {
                let outcome = Self.commit(batch, to: store)
                let failed = if case .failure = outcome { true } else { false }
                // Put back before the loop can hear of the failure and retry.
                if failed { queue.putBack(batch) }
                let changes = batch.upserts.count + batch.deletions.count
                loop.execute { journal.value.finished(through: through, changes: changes, outcome) }
                if failed { return }
            }
        }
    }

    /// Commits `batch`: the changes left out, or the error the store threw,
    /// as a ``PromiseStoreError``.
    private static func commit(
        _ batch: StoreBatch, to store: any PromiseStore
    ) -> Result<[UnstorableChange], PromiseStoreError> {
        do {
            return .success(try store.commit(batch))
        } catch let error as PromiseStoreError {
            return .failure(error)
        } catch {
            return .failure(PromiseStoreError("\(error)"))
        }
    }

    private func finished(through mark: CutMark, changes: Int, _ outcome: Result<[UnstorableChange], PromiseStoreError>) {
        switch state.committed(mark, outcome) {
        case .committed(let recovered):
            commitCount += 1
            if case .success(let unstorable) = outcome, !unstorable.isEmpty {
                changeCount += changes - unstorable.count
                log(unstorable)
            } else {
                changeCount += changes
            }
            if let recovered {
                logger.notice("The store can write again", metadata: ["store": "\(store.location)", "was": "\(recovered)"])
            }
        case .failing(let error, let isNew, let armRetry):
            if isNew {
                logger.error("The store cannot write: changes are refused until it can",
                             metadata: ["store": "\(store.location)", "error": "\(error)"])
            }
            if armRetry { scheduleRetry() }
        }
        while let (body, failure) = state.nextReleased() { body(failure) }
    }

    /// Logs and counts the changes the store refused for good.
    private func log(_ unstorable: [UnstorableChange]) {
        for change in unstorable {
            logger.error("A change cannot be stored: it is left out, the rest is committed", metadata: [
                "promise.id": "\(change.id)", "promise.sequence": "\(change.sequence)",
                "reason": "\(change.reason)", "store": "\(store.location)",
            ])
        }
        unstorableCount += unstorable.count
    }

    private func scheduleRetry() {
        retryTimer = services.schedule(afterMilliseconds: Self.retryMilliseconds) { [weak self] in
            guard let self else { return }
            retryTimer = nil
            let resumed = queue.resume()
            state.retryFired(resumed: resumed)
            if resumed { startWriter() }
        }
    }
}

@available(*, unavailable)
extension GroupCommit: Sendable {}
