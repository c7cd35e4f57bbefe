import Logging
import PromiseJSON
import PromiseModel
import PromiseRPC

/// The memory all connections hold, watched as a whole: the bytes they
/// buffer against `DaemonLimits.maxBufferedBytes` (``BufferBudget``), their
/// unfinished lines against `DaemonLimits.lineTimeoutSeconds`
/// (``LineDeadlines``), and freed memory given back to the system
/// (``HeapTrim``). The two values decide; this type runs their timers and
/// acts on the connections. Loop-thread only.
final class ConnectionMemory {
    /// The least time between two `malloc_trim` calls: one walks the whole
    /// heap, so a churn of frees must not turn into a trim per loop turn.
    static let trimIntervalMilliseconds: UInt64 = 1_000
    /// How many times its own duration a trim waits after the one before:
    /// a trim's cost grows with the heap and its fragments, not with what
    /// it gives back, so trims are spaced by what they cost, to take about
    /// one percent of the loop's time (docs/PERFORMANCE.md).
    static let trimCostFactor: UInt64 = 100

    /// When the trim after one that ran at `now` and took `tookMilliseconds` may run.
    static func nextTrimAllowed(now: UInt64, tookMilliseconds: UInt64) -> UInt64 {
        now + max(trimIntervalMilliseconds, tookMilliseconds * trimCostFactor)
    }
    /// Connections closed since the last trim that make one worth it: each
    /// leaves a few kilobytes of small allocations behind, and a flood of
    /// connections leaves them by the hundred thousand.
    static let closesPerTrim = 4_096

    private(set) var budget: BufferBudget
    private var deadlines: LineDeadlines
    private let loop: UVLoop
    private let logger: Logger
    /// The open connection with this id, if any (set by the server).
    var connection: (UInt64) -> Connection? = { _ in nil }
    /// Every open connection (set by the server), scanned when over budget.
    var everyConnection: () -> [Connection] = { [] }
    /// Runs the cut-off once per loop turn while over budget.
    private var cutOffWatcher: UVLoopWatcher?
    private var deadlineTimer: UVTimer?
    private var isDeadlineTimerRunning = false
    private var trimTimer: UVTimer?
    private var isTrimScheduled = false
    /// When the next trim may run, on the loop's clock.
    private var nextTrimAllowed: UInt64 = 0
    private var closesSinceTrim = 0

    init(limits: DaemonLimits, loop: UVLoop, logger: Logger) throws(UVError) {
        budget = BufferBudget(limit: limits.maxBufferedBytes)
        deadlines = LineDeadlines(timeoutMilliseconds: UInt64(min(max(limits.lineTimeoutSeconds, 0), Int(UInt32.max))) * 1_000)
        self.loop = loop
        self.logger = logger
        cutOffWatcher = try UVLoopWatcher(.idle, loop: loop) { [unowned self] in
            cutOffLargest()
        }
        deadlineTimer = try UVTimer(loop: loop)
        trimTimer = try UVTimer(loop: loop)
    }

    // MARK: The budget

    /// A connection's buffered bytes changed by `delta`.
    func buffered(_ delta: Int) {
        switch budget.changed(by: delta) {
        case .none: break
        case .cutOffLargest: cutOffWatcher?.start()
        case .returnMemory: scheduleTrim()
        }
    }

    /// Closes the connections holding the most until the total is back
    /// within the budget. Runs as the loop turn ends rather than inside the
    /// `send` that went over: that send may be one of thousands a
    /// notification makes, and the scan happens once for all of them.
    private func cutOffLargest() {
        cutOffWatcher?.stop()
        let open = everyConnection()
        let victims = budget.victims(of: open.map { (id: $0.connectionID, bytes: $0.bufferedBytes) })
        guard !victims.isEmpty else { return }
        logger.info("Cutting off the clients that hold the most: the daemon's buffers are full",
                    metadata: ["buffered.bytes": "\(budget.total)", "limit": "\(budget.limit)",
                               "connections": "\(victims.count)"])
        for id in victims {
            guard let victim = connection(id) else { continue }
            victim.cutOff(RPCError(
                .limitExceeded,
                "the daemon's buffers for all clients are full (maxBufferedBytes \(budget.limit) bytes) and this "
                    + "connection held \(victim.bufferedBytes) bytes, among the most: it is closed (promised "
                    + "--max-buffered-bytes sets the limit)",
                data: ["limit": "maxBufferedBytes", "value": .int(budget.limit), "flag": "--max-buffered-bytes"]))
        }
    }

    // MARK: Unfinished lines

    /// Connection `id` holds an unfinished line from now on.
    func lineStarted(_ id: UInt64) {
        deadlines.lineStarted(id, at: loop.now)
        guard !isDeadlineTimerRunning else { return }
        isDeadlineTimerRunning = true
        let interval = deadlines.checkIntervalMilliseconds
        deadlineTimer?.start(afterMilliseconds: interval, repeatMilliseconds: interval) { [unowned self] in
            closeExpiredLines()
        }
    }

    /// Connection `id` no longer holds an unfinished line, or it stopped counting.
    func lineEnded(_ id: UInt64) {
        deadlines.lineEnded(id)
    }

    private func closeExpiredLines() {
        for id in deadlines.expired(at: loop.now) {
            connection(id)?.lineTimedOut(afterSeconds: Int(deadlines.timeoutMilliseconds / 1_000))
        }
        if deadlines.isEmpty {
            isDeadlineTimerRunning = false
            deadlineTimer?.stop()
        }
    }

    // MARK: Giving memory back

    /// A connection closed: after many, what they left is given back.
    func connectionClosed() {
        closesSinceTrim += 1
        if closesSinceTrim >= Self.closesPerTrim { scheduleTrim() }
    }

    /// Gives freed memory back soon, once the frees of this turn (the close
    /// callbacks) are done, and no sooner than ``trimIntervalMilliseconds``
    /// and ``trimCostFactor`` times the last trim's duration after it.
    private func scheduleTrim() {
        guard !isTrimScheduled else { return }
        isTrimScheduled = true
        let now = loop.now
        trimTimer?.start(afterMilliseconds: max(nextTrimAllowed, now + 10) - now) { [unowned self] in
            isTrimScheduled = false
            closesSinceTrim = 0
            let took = HeapTrim.returnFreeMemory()
            let tookMilliseconds = UInt64(took / .milliseconds(1))
            nextTrimAllowed = Self.nextTrimAllowed(now: loop.now, tookMilliseconds: tookMilliseconds)
            if tookMilliseconds >= 20 {
                logger.info("Gave free memory back to the system",
                            metadata: ["took.ms": "\(tookMilliseconds)",
                                       "next.after.ms": "\(nextTrimAllowed - loop.now)"])
            }
        }
    }

    func close() {
        cutOffWatcher?.close()
        cutOffWatcher = nil
        deadlineTimer?.close()
        deadlineTimer = nil
        trimTimer?.close()
        trimTimer = nil
    }
}

@available(*, unavailable)
extension ConnectionMemory: Sendable {}
