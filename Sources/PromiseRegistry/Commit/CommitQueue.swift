import Foundation
import PromiseStore

/// The changes cut on the loop thread that the writer has not taken yet:
/// the one place the two threads share.
///
/// The loop ``add(_:through:)``s each cut; the writer, done with one commit,
/// takes everything added meanwhile as its next batch (``next()``) and goes
/// straight on to commit it. The loop is not on that path: waking it and
/// waiting for it to hand the next batch over would leave the disk idle
/// for part of every commit cycle under load (docs/PERFORMANCE.md).
///
/// ```swift
/// if queue.add(cut, through: CutMark(number: 7, touches: 40)) {  // the writer was idle: start it
///     writer.execute {
///         while let (batch, through) = queue.next() { try? store.commit(batch) }
///     }
/// }
/// ```
final class CommitQueue: @unchecked Sendable {  // `lock` guards every stored property.
    private let lock = NSLock()
    private var batch = StoreBatch()
    /// The newest cut in `batch`.
    private var through = CutMark(number: 0, touches: 0)
    /// True from the moment the writer is started until it finds nothing to take.
    private var isWriting = false
    /// True after a failed commit, until ``resume()``: cuts queue up but do not start the writer.
    private var isHalted = false

    /// Queues cut number `number`, which follows every cut added before it.
    /// Returns true when the writer was idle and must now be started (the
    /// queue counts it as running from here on).
    func add(_ cut: StoreBatch, through mark: CutMark) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        batch.append(cut)
        through = mark
        return startIfIdle()
    }

    /// The writer's next batch and the newest cut in it; nil when nothing is
    /// queued, and the writer then counts as stopped.
    func next() -> (batch: StoreBatch, through: CutMark)? {
        lock.lock()
        defer { lock.unlock() }
        guard !batch.isEmpty else {
            isWriting = false
            return nil
        }
        let taken = (batch, through)
        batch = StoreBatch()
        return taken
    }

    /// Puts a batch the store refused back in front of what was cut after
    /// it, and stops the writer until ``resume()``: written later, the older
    /// batch would overwrite newer states of the same promises.
    func putBack(_ failed: StoreBatch) {
        lock.lock()
        defer { lock.unlock() }
        var retry = failed
        retry.append(batch)
        batch = retry
        isWriting = false
        isHalted = true
    }

    /// Ends a halt. Returns true when there is something to write and the
    /// writer must be started, false when the queue is empty.
    func resume() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        isHalted = false
        return startIfIdle()
    }

    private func startIfIdle() -> Bool {
        guard !isWriting, !isHalted, !batch.isEmpty else { return false }
        isWriting = true
        return true
    }
}

/// Which cut a batch ends with: its number, and how many touches
/// ``GroupCommit`` had seen when it was made, so that the loop can tell
/// which touches (and so which held messages) a batch's outcome concerns.
struct CutMark: Sendable {
    var number: Int
    var touches: Int
}

extension StoreBatch {
    /// Adds the changes of a later batch, so that committing the result
    /// leaves the store as committing the two in turn would. Deletions are
    /// applied before upserts, so a later deletion must also drop the
    /// earlier write of the promise it deletes.
    mutating func append(_ later: StoreBatch) {
        // The usual case, the writer having taken the last batch: adopt the
        // arrays rather than copy each promise (a retain per field) into empty ones.
        defer { counters.merge(later.counters, uniquingKeysWith: max) }
        guard !isEmpty else {
            let kept = counters
            self = later
            return counters = kept
        }
        if !later.deletions.isEmpty && !upserts.isEmpty {
            let deleted = Set(later.deletions)
            upserts.removeAll { deleted.contains(StoreDeletion(id: $0.id, sequence: $0.sequence)) }
        }
        if !later.deletions.isEmpty && !logs.isEmpty {
            let deleted = Set(later.deletions.map(\.sequence))
            logs.removeAll { deleted.contains($0.sequence) }
        }
        deletions += later.deletions
        upserts += later.upserts
        logs += later.logs
        poolLimits += later.poolLimits
    }
}
