import PromiseStore

/// The bookkeeping of ``GroupCommit`` as a value: which ids the next cut
/// writes, which messages wait for which cut, which changes the store
/// refused, and whether the store is failing. Events go in, actions come
/// out; the owner cuts, commits, logs, runs messages and arms the retry
/// timer, so that every rule here is tested without a store, a thread or
/// a loop (GroupCommitStateTests).
///
/// ```swift
/// var state = GroupCommitState<String>()
/// state.touched("a")                        // .scheduleCut
/// state.deliver("answer a")                 // .hold: it waits for cut 1
/// let cut = state.cut()!                    // ids ["a"], mark 1
/// state.committed(cut.mark, changes: 1, .success([]))
/// state.nextReleased()                      // ("answer a", nil)
/// ```
///
/// Touches are numbered in the order made: a message depends on the
/// touches since the message given before it, which are the changes its
/// request made (see ``GroupCommit``), and it learns of a refusal of any of
/// them.
struct GroupCommitState<Message> {
    /// Ids changed since the last cut, in the order first touched.
    private var dirty: [String] = []
    private var dirtySet: PromiseIDSet = []
    /// Promises dropped since the last cut.
    private var removals: [StoreDeletion] = []
    /// Step logs and pool limits to write with the next cut.
    private var pendingLogs: [StoredStepLog] = []
    private var pendingPoolLimits: [StoredPoolLimit] = []
    /// Cuts are numbered from 1; the next one made is `nextCut`.
    private var nextCut = 1
    /// The newest cut holding a change; messages given now wait for it.
    private var newestTouched = 0
    /// Every cut up to this one has been committed or has failed.
    private var finishedThrough = 0
    private var cutScheduled = false
    private var held: [Held] = []
    private var heldStart = 0
    /// Held messages for cuts up to this one are released, with `releaseFailure`.
    private var releaseThrough = 0
    private var releaseFailure: PromiseStoreError?
    /// Every id touched or removed, in order, from the touch numbered
    /// `touchLogBase`: which changes each held message depends on. Trimmed
    /// as messages are released, so it holds about a commit's worth.
    private var touchLog: [String] = []
    private var touchLogBase = 0
    /// Touches before this one belong to a message given already, or to a
    /// committed batch: the next message depends on those from here on.
    private var claimedThrough = 0
    /// Touches before this one are in batches whose outcome is known.
    private var finishedTouches = 0
    /// The touches whose change the store refused for good, while a message
    /// depending on them may still be held; empty but for such moments.
    private var refusedTouches: [Int: PromiseStoreError] = [:]

    /// Why the last commit failed, until one succeeds again or a retry finds nothing to write.
    private(set) var failure: PromiseStoreError?
    /// True from a failed commit until its retry timer fires.
    private(set) var retryArmed = false

    /// A message held until the cut it waits for is committed.
    private struct Held {
        let cut: Int
        /// The touches it depends on: those since the message given before it.
        let touches: Range<Int>
        let message: Message
    }

    /// What a change asks of the owner.
    enum ChangeAction: Equatable {
        /// Cut at the end of this loop turn (``cut()``).
        case scheduleCut
        /// A cut is scheduled already.
        case none
    }

    /// What to do with a message given to ``deliver(_:)``.
    enum DeliverAction {
        /// Run it now, with this failure (nil: everything it depends on is stored).
        case run(Message, PromiseStoreError?)
        /// It is held, and comes out of ``nextReleased()`` once its cut is finished.
        case hold
    }

    /// What a cut writes: the owner snapshots `ids` as they are now and
    /// adds the step logs of those that settled.
    struct Cut {
        var ids: [String]
        var removals: [StoreDeletion]
        var logs: [StoredStepLog]
        var poolLimits: [StoredPoolLimit]
        var mark: CutMark
    }

    /// What the outcome of a commit asks of the owner, besides running
    /// each message from ``nextReleased()``.
    enum CommitAction: Equatable {
        /// Committed; `recovered` is the failure the store had until now.
        case committed(recovered: PromiseStoreError?)
        /// The store cannot write: log it if `isNew`, and arm the retry timer if `armRetry`.
        case failing(PromiseStoreError, isNew: Bool, armRetry: Bool)
    }

    // MARK: Changes

    private var touchCount: Int { touchLogBase + touchLog.count }

    /// Promise `id` changed: it is written as it then is in the next cut.
    mutating func touched(_ id: String) -> ChangeAction {
        if dirtySet.insert(id).inserted { dirty.append(id) }
        touchLog.append(id)
        return changed()
    }

    /// A promise is gone: it is deleted in the next cut. Its id may be made
    /// again meanwhile; the new promise has a new sequence, which the
    /// deletion leaves alone.
    mutating func removed(_ promise: StoreDeletion) -> ChangeAction {
        removals.append(promise)
        touchLog.append(promise.id)
        return changed()
    }

    /// Step logs to write in the next cut, with no promise changed.
    mutating func wrote(logs: [StoredStepLog]) -> ChangeAction {
        guard !logs.isEmpty else { return .none }
        pendingLogs += logs
        return changed()
    }

    /// A pool limit to write in the next cut, with no promise changed.
    mutating func wrote(poolLimit: StoredPoolLimit) -> ChangeAction {
        pendingPoolLimits.append(poolLimit)
        return changed()
    }

    private mutating func changed() -> ChangeAction {
        newestTouched = nextCut
        guard !cutScheduled else { return .none }
        cutScheduled = true
        return .scheduleCut
    }

    // MARK: Messages

    /// A message that reveals every change made so far: run at once when
    /// nothing is outstanding, or while the store is failing (so that reads
    /// are still answered); otherwise held until its cut is finished.
    mutating func deliver(_ message: Message) -> DeliverAction {
        let touches = claimedThrough..<touchCount
        claimedThrough = touches.upperBound
        if newestTouched <= finishedThrough || failure != nil { return .run(message, nil) }
        held.append(Held(cut: newestTouched, touches: touches, message: message))
        return .hold
    }

    /// Like ``deliver(_:)``, but while the store is failing the message runs
    /// at once with the failure: for work that must not start before its
    /// record is stored (a `then … exec` command).
    mutating func deliverAfterCommit(_ message: Message) -> DeliverAction {
        if let failure { return .run(message, failure) }
        return deliver(message)
    }

    /// A message run once everything touched so far is finished, depending
    /// on no change of its own: for a clean shutdown.
    mutating func flush(_ message: Message) -> DeliverAction {
        if failure != nil || newestTouched <= finishedThrough { return .run(message, nil) }
        held.append(Held(cut: newestTouched, touches: claimedThrough..<claimedThrough, message: message))
        return .hold
    }

    // MARK: Cutting and committing

    /// The turn's changes, numbered as the next cut; nil when there are
    /// none. The owner queues them for the writer.
    mutating func cut() -> Cut? {
        cutScheduled = false
        guard !dirty.isEmpty || !removals.isEmpty || !pendingLogs.isEmpty || !pendingPoolLimits.isEmpty else {
            return nil
        }
        let cut = Cut(ids: dirty, removals: removals, logs: pendingLogs, poolLimits: pendingPoolLimits,
                      mark: CutMark(number: nextCut, touches: touchCount))
        // Kept for the next turn's cut, unless a burst (a restore, a mass
        // collection) made them large enough to be worth giving back.
        let keep = dirty.capacity <= 1024
        dirty.removeAll(keepingCapacity: keep)
        dirtySet.removeAll(keepingCapacity: keep)
        removals = []
        pendingLogs = []
        pendingPoolLimits = []
        nextCut += 1
        return cut
    }

    /// The batch ending with cut `mark` is finished: committed, with the
    /// changes the store refused for good, or failed. The messages it held
    /// then come out of ``nextReleased()``.
    mutating func committed(
        _ mark: CutMark, _ outcome: Result<[UnstorableChange], PromiseStoreError>
    ) -> CommitAction {
        // A retry after a failure may end with the cut that failed: not a newer one.
        precondition(mark.number >= finishedThrough && mark.touches >= finishedTouches, "batches finish in the order cut")
        precondition(mark.number < nextCut, "a batch finishes after it is cut")
        finishedThrough = mark.number
        let touches = finishedTouches..<mark.touches
        finishedTouches = mark.touches
        // A change no message claimed (a timeout's) is known now: no later message depends on it.
        claimedThrough = max(claimedThrough, mark.touches)
        switch outcome {
        case .success(let unstorable):
            if !unstorable.isEmpty { refuse(unstorable, touchedIn: touches) }
            let recovered = failure
            failure = nil
            (releaseThrough, releaseFailure) = (mark.number, nil)
            return .committed(recovered: recovered)
        case .failure(let error):
            let isNew = failure == nil
            failure = error
            // What waits for later cuts waits for changes that will not be
            // written before a retry either; nothing is held while failing.
            (releaseThrough, releaseFailure) = (.max, error)
            let armRetry = !retryArmed
            retryArmed = true
            return .failing(error, isNew: isNew, armRetry: armRetry)
        }
    }

    /// The retry timer fired. `resumed` tells whether the writer had a batch
    /// to try again; with none, nothing is failing any more.
    mutating func retryFired(resumed: Bool) {
        precondition(retryArmed, "a retry fires only once armed")
        retryArmed = false
        if !resumed { failure = nil }
    }

    /// The next message released by the last ``committed(_:_:)``, with the
    /// failure it is told of (the batch's, or the refusal of a change it
    /// depends on); nil once none is left. Called until nil: a message run
    /// may deliver others, which this state takes in between.
    mutating func nextReleased() -> (Message, PromiseStoreError?)? {
        guard heldStart < held.count, held[heldStart].cut <= releaseThrough else {
            if heldStart == held.count {
                held.removeAll(keepingCapacity: true)
                heldStart = 0
            }
            trimTouchLog()
            return nil
        }
        let next = held[heldStart]
        heldStart += 1
        assert(next.touches.upperBound <= finishedTouches || releaseFailure != nil, "released before its changes were written")
        return (next.message, releaseFailure ?? refusal(of: next.touches))
    }

    /// Notes which of the batch's touches made the changes the store refused.
    private mutating func refuse(_ unstorable: [UnstorableChange], touchedIn touches: Range<Int>) {
        var reasons = PromiseMap<PromiseStoreError>()
        for change in unstorable {
            reasons[change.id] = PromiseStoreError("promise \"\(change.id)\" cannot be stored: \(change.reason)")
        }
        // Touches before the log's start belong to messages released already.
        for touch in max(touches.lowerBound, touchLogBase)..<touches.upperBound {
            if let reason = reasons[touchLog[touch - touchLogBase]] { refusedTouches[touch] = reason }
        }
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
    private mutating func trimTouchLog() {
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
}
