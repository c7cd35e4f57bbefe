import Logging
import Promise

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

    // The bookkeeping below is `@exclusivity(unchecked)` for the reason
    // given in `Registry`: loop thread only, no overlapping access, and a
    // runtime check per access (26 per durable create+resolve pair).
    /// Ids changed since the last cut, in the order first touched.
    @exclusivity(unchecked) private var dirty: [String] = []
    @exclusivity(unchecked) private var dirtySet: PromiseIDSet = []
    /// Promises dropped since the last cut.
    @exclusivity(unchecked) private var removals: [StoreDeletion] = []
    /// Cuts are numbered from 1; the next one made is `nextCut`.
    @exclusivity(unchecked) private var nextCut = 1
    /// The newest cut holding a change; messages given now wait for it.
    @exclusivity(unchecked) private var newestTouched = 0
    /// Every cut up to this one has been committed or has failed.
    @exclusivity(unchecked) private var finishedThrough = 0
    @exclusivity(unchecked) private var cutScheduled = false
    /// Step logs given to ``write(logs:)`` since the last cut.
    @exclusivity(unchecked) private var pendingLogs: [StoredStepLog] = []
    @exclusivity(unchecked) private var pendingPoolLimits: [StoredPoolLimit] = []
    @exclusivity(unchecked) private var held: [HeldMessage] = []
    @exclusivity(unchecked) private var heldStart = 0
    /// Every id touched or removed, in order, from the touch numbered
    /// `touchLogBase`: which changes each held message depends on. Trimmed
    /// as messages are released, so it holds about a commit's worth.
    @exclusivity(unchecked) private var touchLog: [String] = []
    @exclusivity(unchecked) private var touchLogBase = 0
    /// Touches before this one belong to a message given already, or to a
    /// committed batch: the next message depends on those from here on.
    @exclusivity(unchecked) private var claimedThrough = 0
    /// Touches before this one are in batches whose outcome is known.
    @exclusivity(unchecked) private var finishedTouches = 0
    /// The touches whose change the store refused for good, while a message
    /// depending on them may still be held; empty but for such moments.
    @exclusivity(unchecked) private var refusedTouches: [Int: PromiseStoreError] = [:]
    private var retryTimer: (any ScheduledTimer)?
    /// How long a failing store waits before it tries again.
    static let retryMilliseconds: UInt64 = 1000

    /// Why the last commit failed, until one succeeds again.
    public private(set) var failure: PromiseStoreError?
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
        if dirtySet.insert(id).inserted { dirty.append(id) }
        touchLog.append(id)
        changed()
    }

    /// Notes that a promise is gone, to be deleted from the store in the next
    /// cut. Its id may be made again meanwhile: the new promise has a new
    /// sequence, so the deletion leaves it alone.
    func remove(_ promise: StoreDeletion) {
        removals.append(promise)
        touchLog.append(promise.id)
        changed()
    }

    /// Writes these step logs in the next cut, with no promise changed (the
    /// registry's periodic save of running steps' output). Messages given
    /// from now on wait for that cut, as for any change.
    func write(logs: [StoredStepLog]) {
        guard !logs.isEmpty else { return }
        pendingLogs += logs
        changed()
    }

    /// Writes this pool limit in the next cut, with no promise changed.
    /// Messages given from now on (the `pool.set` answer) wait for that cut.
    func write(poolLimit: StoredPoolLimit) {
        pendingPoolLimits.append(poolLimit)
        changed()
    }

    /// How many ids were touched or removed since start.
    private var touchCount: Int { touchLogBase + touchLog.count }

    private func changed() {
        newestTouched = nextCut
        scheduleCut()
    }

    /// Runs `body` once everything touched so far is committed (with nil),
    /// or once its batch has failed (with the reason); at once when nothing
    /// is outstanding, and at once (with nil) while the store is failing, so
    /// that reads are still answered. Bodies run in the order given.
    func deliver(_ body: @escaping (PromiseStoreError?) -> Void) {
        let touches = claimedThrough..<touchCount
        claimedThrough = touches.upperBound
        if newestTouched <= finishedThrough || failure != nil {
            body(nil)
        } else {
            held.append(HeldMessage(cut: newestTouched, touches: touches, body: body))
        }
    }

    /// Like ``deliver(_:)``, but while the store is failing `body` gets the
    /// failure at once: for work that must not start before its record is
    /// stored (a `then … exec` command).
    func afterCommit(_ body: @escaping (PromiseStoreError?) -> Void) {
        if let failure { return body(failure) }
        deliver(body)
    }

    /// Calls `done` once everything touched so far is committed or has
    /// failed: for a clean shutdown.
    func flush(_ done: @escaping () -> Void) {
        if failure != nil || newestTouched <= finishedThrough { return done() }
        held.append(HeldMessage(cut: newestTouched, touches: claimedThrough..<claimedThrough, body: { _ in done() }))
    }

    // MARK: Cutting and committing

    private func scheduleCut() {
        guard !cutScheduled else { return }
        cutScheduled = true
        let journal = LoopBound(self)
        loop.execute { journal.value.cut() }
    }

    /// Queues the turn's changes, and starts the writer if it is idle. While
    /// the store is failing, cuts queue up behind the failed batch and wait
    /// for the retry.
    private func cut() {
        cutScheduled = false
        guard !dirty.isEmpty || !removals.isEmpty || !pendingLogs.isEmpty || !pendingPoolLimits.isEmpty else { return }
        var logs = dirty.isEmpty ? pendingLogs : pendingLogs + logSnapshots(dirty)
        pendingLogs = []
        if !removals.isEmpty && !logs.isEmpty {
            // Logs are written after deletions: one of a promise dropped since would outlive it.
            let removed = Set(removals.map(\.sequence))
            logs.removeAll { removed.contains($0.sequence) }
        }
        let cut = StoreBatch(upserts: snapshots(dirty), deletions: removals, counters: counters(), logs: logs,
                             poolLimits: pendingPoolLimits)
        pendingPoolLimits = []
        // Kept for the next turn's cut, unless a burst (a restore, a mass
        // collection) made them large enough to be worth giving back.
        let keep = dirty.capacity <= 1024
        dirty.removeAll(keepingCapacity: keep)
        dirtySet.removeAll(keepingCapacity: keep)
        removals = []
        let mark = CutMark(number: nextCut, touches: touchCount)
        nextCut += 1
        if queue.add(cut, through: mark) { startWriter() }
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
        // A retry after a failure may end with the cut that failed: not a newer one.
        assert(mark.number >= finishedThrough && mark.touches >= finishedTouches, "batches finish in the order cut")
        finishedThrough = mark.number
        let touches = finishedTouches..<mark.touches
        finishedTouches = mark.touches
        // A change no message claimed (a timeout's) is known now: no later message depends on it.
        claimedThrough = max(claimedThrough, mark.touches)
        switch outcome {
        case .success(let unstorable):
            commitCount += 1
            changeCount += changes - unstorable.count
            if !unstorable.isEmpty { refuse(unstorable, touchedIn: touches) }
            if let failure {
                logger.notice("The store can write again", metadata: ["store": "\(store.location)", "was": "\(failure)"])
                self.failure = nil
            }
            release(through: mark.number, nil)
        case .failure(let error):
            if failure == nil {
                logger.error("The store cannot write: changes are refused until it can",
                             metadata: ["store": "\(store.location)", "error": "\(error)"])
            }
            failure = error
            // What waits for later cuts waits for changes that will not be written
            // before a retry either; nothing is held while failing.
            release(through: .max, error)
            scheduleRetry()
        }
    }

    /// Logs and counts the changes the store refused for good, and notes
    /// which of the batch's touches made them, for the messages that depend on them.
    private func refuse(_ unstorable: [UnstorableChange], touchedIn touches: Range<Int>) {
        var reasons = PromiseMap<PromiseStoreError>()
        for change in unstorable {
            logger.error("A change cannot be stored: it is left out, the rest is committed", metadata: [
                "promise.id": "\(change.id)", "promise.sequence": "\(change.sequence)",
                "reason": "\(change.reason)", "store": "\(store.location)",
            ])
            reasons[change.id] = PromiseStoreError("promise \"\(change.id)\" cannot be stored: \(change.reason)")
        }
        unstorableCount += unstorable.count
        // Touches before the log's start belong to messages released already.
        for touch in max(touches.lowerBound, touchLogBase)..<touches.upperBound {
            if let reason = reasons[touchLog[touch - touchLogBase]] { refusedTouches[touch] = reason }
        }
    }

    private func release(through cut: Int, _ failure: PromiseStoreError?) {
        while heldStart < held.count, held[heldStart].cut <= cut {
            let message = held[heldStart]
            heldStart += 1
            assert(message.touches.upperBound <= finishedTouches || failure != nil, "released before its changes were written")
            message.body(failure ?? refusal(of: message.touches))
        }
        if heldStart == held.count {
            held.removeAll(keepingCapacity: true)
            heldStart = 0
        }
        trimTouchLog()
    }

    /// Why a change made by these touches was not stored, if one was not.
    private func refusal(of touches: Range<Int>) -> PromiseStoreError? {
        guard !refusedTouches.isEmpty else { return nil }
        for touch in touches { if let reason = refusedTouches[touch] { return reason } }
        return nil
    }

    /// Drops the touches no held message, nor the next one given, depends
    /// on: all of them usually; else once they are half the log, so that
    /// shifting the rest costs O(1) per touch.
    private func trimTouchLog() {
        let needed = heldStart < held.count ? held[heldStart].touches.lowerBound : claimedThrough
        assert(needed >= touchLogBase && needed <= touchCount, "held messages depend on touches in order")
        let drop = needed - touchLogBase
        if drop == touchLog.count {
            touchLog.removeAll(keepingCapacity: touchLog.capacity <= 4096)
        } else if drop > 0 && drop >= touchLog.count / 2 {
            touchLog.removeFirst(drop)
        } else {
            return
        }
        touchLogBase = needed
        if !refusedTouches.isEmpty { refusedTouches = refusedTouches.filter { $0.key >= needed } }
    }

    private func scheduleRetry() {
        guard retryTimer == nil else { return }
        retryTimer = services.schedule(afterMilliseconds: Self.retryMilliseconds) { [weak self] in
            guard let self else { return }
            retryTimer = nil
            if queue.resume() { startWriter() } else { failure = nil }
        }
    }
}

/// A message held until the cut it waits for is committed.
///
/// A struct, not a tuple: a closure stored in a tuple array element is kept
/// behind a reabstraction thunk, one more allocation per held answer.
private struct HeldMessage {
    let cut: Int
    /// The touches it depends on: those since the message given before it.
    let touches: Range<Int>
    let body: (PromiseStoreError?) -> Void
}

@available(*, unavailable)
extension GroupCommit: Sendable {}
