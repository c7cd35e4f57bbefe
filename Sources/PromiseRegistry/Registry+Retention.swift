import Logging
import Promise
import PromiseModel
import PromiseStore

/// Garbage collection: settled promises are kept for a retention period
/// (or until `maxPromises` needs their room), then dropped from memory and
/// from the store (docs/DURABILITY.md, "Retention"), so that a daemon under
/// a churn of short-lived promises stays bounded.
extension Registry {
    /// The longest pause between two collections.
    static let maxCollectionIntervalMilliseconds: Int64 = 60_000

    /// Keeps settled promises for `milliseconds` after they settle, checking
    /// every half of that (at least every 100 ms, at most every minute).
    /// Call once, on the loop thread, before ``restore(_:)``.
    ///
    /// ```swift
    /// registry.retain(forMilliseconds: 24 * 3600 * 1000)
    /// ```
    public func retain(forMilliseconds milliseconds: Int64) {
        retainMilliseconds = max(0, milliseconds)
        queueSettledForRetention()
        scheduleCollection()
    }

    /// Queues every settled promise held, in the order they settled.
    func queueSettledForRetention() {
        retentionQueue = order.filter { !$0.isPending }.sorted { ($0.settled ?? 0) < ($1.settled ?? 0) }
        retentionStart = 0
    }

    private func scheduleCollection() {
        guard let retain = retainMilliseconds else { return }
        let interval = min(max(retain / 2, 100), Self.maxCollectionIntervalMilliseconds)
        retentionTimer = services.schedule(afterMilliseconds: UInt64(interval)) { [weak self] in
            self?.collectExpired()
            self?.scheduleCollection()
        }
    }

    /// Drops the promises settled longer ago than the retention period, in
    /// the order they settled. Returns how many it dropped.
    ///
    /// One that a pending promise still needs (a `then` parent, a
    /// combinator's input) is kept and queued again behind the rest: it goes
    /// once its dependents have settled and the queue reaches it again, so a
    /// restart can always rebuild what is pending.
    @discardableResult
    func collectExpired() -> Int {
        guard let retain = retainMilliseconds else { return 0 }
        let cutoff = now() - retain
        var collected = 0
        // Those queued again below are looked at next time, not in this loop.
        let end = retentionQueue.count
        while retentionStart < end {
            let entry = retentionQueue[retentionStart]
            guard (entry.settled ?? cutoff) <= cutoff else { break }
            retentionStart += 1
            if collect(entry) { collected += 1 }
        }
        if retentionStart > 1024 && retentionStart > retentionQueue.count / 2 {
            retentionQueue.removeFirst(retentionStart)
            retentionStart = 0
        }
        collectedCount += collected
        if collected > 0 { logger.debug("Collected settled promises", metadata: ["count": "\(collected)"]) }
        return collected
    }

    /// At `maxPromises`, new promises take the place of the oldest settled
    /// ones before their retention period ends: a busy daemon keeps serving
    /// rather than refusing work because of promises long settled.
    func makeRoom(for count: Int) {
        guard retainMilliseconds != nil else { return }
        // A hundredth of the limit at a time, so that this happens (and is logged) rarely.
        let target = limits.maxPromises - count - limits.maxPromises / 100
        var collected = 0
        let end = retentionQueue.count
        while entries.count > target, retentionStart < end {
            let entry = retentionQueue[retentionStart]
            retentionStart += 1
            if collect(entry) { collected += 1 }
        }
        collectedCount += collected
        if collected > 0 {
            logger.info("Collected settled promises early to stay under maxPromises",
                        metadata: ["count": "\(collected)", "limit": "\(limits.maxPromises)"])
        }
    }

    /// Removes `entry`, taken from the retention queue, unless it is gone
    /// already or a pending promise still needs it (then it is queued again).
    private func collect(_ entry: RemotePromise) -> Bool {
        guard !entry.isRemoved else { return false }
        guard entry.dependents == 0 else {
            retentionQueue.append(entry)
            return false
        }
        remove(entry)
        return true
    }
}
