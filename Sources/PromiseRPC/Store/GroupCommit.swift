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
/// given. A batch that cannot be written is reported to what it held back,
/// and the store is *failing*: its changes are kept and retried every
/// second, messages are no longer held (reads keep working), and
/// ``failure`` tells the dispatcher to refuse changes until a retry succeeds.
///
/// ```swift
/// let journal = GroupCommit(store: store, loop: loopExecutor, writer: DispatchQueue(label: "store"),
///                           services: services, logger: logger)
/// journal.snapshots = { ids in registry.storedPromises(ids) }
/// journal.touch("build")                      // changed in memory
/// journal.deliver { failure in send(answer) }  // runs once "build" is on disk
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

    // The bookkeeping below is `@exclusivity(unchecked)` for the reason
    // given in `Registry`: loop thread only, no overlapping access, and a
    // runtime check per access (26 per durable create+resolve pair).
    /// Ids changed since the last cut, in the order first touched.
    @exclusivity(unchecked) private var dirty: [String] = []
    @exclusivity(unchecked) private var dirtySet: Set<String> = []
    /// Promises dropped since the last cut.
    @exclusivity(unchecked) private var removals: [StoreDeletion] = []
    /// Cuts are numbered from 1; the next one made is `nextCut`.
    @exclusivity(unchecked) private var nextCut = 1
    /// The newest cut holding a change; messages given now wait for it.
    @exclusivity(unchecked) private var newestTouched = 0
    /// Every cut up to this one has been committed or has failed.
    @exclusivity(unchecked) private var finishedThrough = 0
    @exclusivity(unchecked) private var cutScheduled = false
    @exclusivity(unchecked) private var held: [HeldMessage] = []
    @exclusivity(unchecked) private var heldStart = 0
    private var retryTimer: (any ScheduledTimer)?
    /// How long a failing store waits before it tries again.
    static let retryMilliseconds: UInt64 = 1000

    /// Why the last commit failed, until one succeeds again.
    public private(set) var failure: PromiseStoreError?
    /// Batches committed since start.
    public private(set) var commitCount = 0
    /// Promise writes and deletions committed since start.
    public private(set) var changeCount = 0
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
        changed()
    }

    /// Notes that a promise is gone, to be deleted from the store in the next
    /// cut. Its id may be made again meanwhile: the new promise has a new
    /// sequence, so the deletion leaves it alone.
    func remove(_ promise: StoreDeletion) {
        removals.append(promise)
        changed()
    }

    private func changed() {
        newestTouched = nextCut
        scheduleCut()
    }

    /// Runs `body` once everything touched so far is committed (with nil),
    /// or once its batch has failed (with the reason); at once when nothing
    /// is outstanding, and at once (with nil) while the store is failing, so
    /// that reads are still answered. Bodies run in the order given.
    func deliver(_ body: @escaping (PromiseStoreError?) -> Void) {
        if newestTouched <= finishedThrough || failure != nil {
            body(nil)
        } else {
            held.append(HeldMessage(cut: newestTouched, body: body))
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
        held.append(HeldMessage(cut: newestTouched, body: { _ in done() }))
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
        guard !dirty.isEmpty || !removals.isEmpty else { return }
        let cut = StoreBatch(upserts: snapshots(dirty), deletions: removals)
        // Kept for the next turn's cut, unless a burst (a restore, a mass
        // collection) made them large enough to be worth giving back.
        let keep = dirty.capacity <= 1024
        dirty.removeAll(keepingCapacity: keep)
        dirtySet.removeAll(keepingCapacity: keep)
        removals = []
        let number = nextCut
        nextCut += 1
        if queue.add(cut, through: number) { startWriter() }
    }

    /// Commits batch after batch until nothing is queued, telling the loop
    /// how each went; stops at a failure, leaving the batch queued.
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

    /// Commits `batch`, with any error the store throws as a ``PromiseStoreError``.
    private static func commit(_ batch: StoreBatch, to store: any PromiseStore) -> Result<Void, PromiseStoreError> {
        do {
            try store.commit(batch)
            return .success(())
        } catch let error as PromiseStoreError {
            return .failure(error)
        } catch {
            return .failure(PromiseStoreError("\(error)"))
        }
    }

    private func finished(through cut: Int, changes: Int, _ outcome: Result<Void, PromiseStoreError>) {
        finishedThrough = cut
        switch outcome {
        case .success:
            commitCount += 1
            changeCount += changes
            if let failure {
                logger.notice("The store can write again", metadata: ["store": "\(store.location)", "was": "\(failure)"])
                self.failure = nil
            }
            release(through: cut, nil)
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

    private func release(through cut: Int, _ failure: PromiseStoreError?) {
        while heldStart < held.count, held[heldStart].cut <= cut {
            let body = held[heldStart].body
            heldStart += 1
            body(failure)
        }
        if heldStart == held.count {
            held.removeAll(keepingCapacity: true)
            heldStart = 0
        }
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
    let body: (PromiseStoreError?) -> Void
}

@available(*, unavailable)
extension GroupCommit: Sendable {}
