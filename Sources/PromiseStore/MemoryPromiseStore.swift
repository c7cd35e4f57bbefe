import Foundation

/// A ``PromiseStore`` in this process's memory: the reference implementation
/// of the protocol's rules, and the store unit tests restart a registry from.
/// It can be told to fail (``failCommits``) to test what the daemon does when
/// its disk is full or read-only, to refuse the changes of some promises for
/// good (``refusedIDs``), as SQLite refuses a row too big, and it can start
/// with promises in quarantine.
///
/// ```swift
/// let store = MemoryPromiseStore()
/// store.failCommits = PromiseStoreError("disk full")
/// try store.commit(batch)   // throws "disk full"; nothing is applied
/// store.failCommits = nil
/// store.refusedIDs = ["big": "string or blob too big"]
/// try store.commit(batch)   // applies all but the changes of "big", and returns those
/// ```
public final class MemoryPromiseStore: PromiseStore, @unchecked Sendable {  // `lock` guards every stored property.
    private let lock = NSLock()
    private var promises = PromiseMap<StoredPromise>()
    private var quarantine: [QuarantinedPromise]
    private var counters: [String: Int] = [:]
    /// Step logs by their promise's sequence.
    private var logs: [Int: StoredStepLog] = [:]
    private var poolLimits: [String: StoredPoolLimit] = [:]
    private var failure: PromiseStoreError?
    private var refused: [String: String] = [:]
    private var commits = 0

    public init(_ promises: [StoredPromise] = [], quarantined: [QuarantinedPromise] = []) {
        for promise in promises { self.promises[promise.id] = promise }
        quarantine = quarantined
    }

    public var location: String { "memory" }

    /// When set, every ``commit(_:)`` throws it and applies nothing.
    public var failCommits: PromiseStoreError? {
        get { lock.withLock { failure } }
        set { lock.withLock { failure = newValue } }
    }

    /// Ids whose changes every ``commit(_:)`` leaves out and returns, with
    /// the reason given: changes that can never be stored.
    public var refusedIDs: [String: String] {
        get { lock.withLock { refused } }
        set { lock.withLock { refused = newValue } }
    }

    /// How many batches were committed.
    public var commitCount: Int { lock.withLock { commits } }

    public func load() throws -> StoreContents {
        lock.withLock {
            // As SQLite's does, a log whose promise is not stored is not loaded.
            StoreContents(promises: promises.values.sorted { $0.sequence < $1.sequence }, quarantined: quarantine,
                          counters: counters,
                          logs: logs.values.filter { promises[$0.id]?.sequence == $0.sequence }
                              .sorted { $0.sequence < $1.sequence },
                          poolLimits: poolLimits.values.sorted { $0.pool < $1.pool })
        }
    }

    @discardableResult
    public func commit(_ batch: StoreBatch) throws -> [UnstorableChange] {
        try lock.withLock {
            if let failure { throw failure }
            var left: [UnstorableChange] = []
            for deletion in batch.deletions where promises[deletion.id]?.sequence == deletion.sequence {
                if let reason = refused[deletion.id] {
                    left.append(UnstorableChange(id: deletion.id, sequence: deletion.sequence, reason: reason))
                    continue
                }
                promises[deletion.id] = nil
                logs[deletion.sequence] = nil
            }
            for promise in batch.upserts {
                if let reason = refused[promise.id] {
                    left.append(UnstorableChange(id: promise.id, sequence: promise.sequence, reason: reason))
                    continue
                }
                promises[promise.id] = promise
            }
            for log in batch.logs { logs[log.sequence] = log }
            counters.merge(batch.counters, uniquingKeysWith: max)
            for limit in batch.poolLimits { poolLimits[limit.pool] = limit }
            commits += 1
            return left
        }
    }

    /// The stored step log of the promise with `sequence`, if any.
    public func log(sequence: Int) -> StoredStepLog? {
        lock.withLock { logs[sequence] }
    }

    /// The stored promise `id`, if any.
    public subscript(id: String) -> StoredPromise? {
        lock.withLock { promises[id] }
    }
}
