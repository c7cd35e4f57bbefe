/// Where the daemon keeps its promises across restarts (docs/DURABILITY.md).
///
/// The protocol is deliberately narrow — load everything once, then apply
/// batches atomically — so that a backend needs no knowledge of the registry:
/// SQLite on the daemon's machine today (`SQLitePromiseStore`), a networked
/// database shared by several daemons later. The registry never calls a store
/// directly: ``GroupCommit`` batches its changes and calls ``commit(_:)`` on a
/// thread of its own, never on the loop thread.
///
/// ```swift
/// let store = MemoryPromiseStore()
/// try store.commit(StoreBatch(upserts: [StoredPromise(id: "a", sequence: 0, kind: "created", created: 0)]))
/// try store.load().promises.map(\.id)   // ["a"]
/// ```
public protocol PromiseStore: AnyObject, Sendable {
    /// Everything stored, in creation order (ascending ``StoredPromise/sequence``),
    /// and what could not be loaded. Called once, before the daemon serves.
    ///
    /// A stored promise that cannot be read (its document does not parse, or
    /// its id is stored twice) must not stop the daemon: the store sets it
    /// aside, where it can be inspected, and lists it in
    /// ``StoreContents/quarantined``.
    ///
    /// - Throws: ``PromiseStoreError`` when the store itself cannot be read.
    func load() throws -> StoreContents

    /// Applies `batch` durably: when this returns, what it applied survives a
    /// crash or power cut; when it throws, none of it was applied. Called
    /// from one thread at a time.
    ///
    /// A change that can never be stored, whenever it is tried (too big, a
    /// constraint), is left out and returned, and the rest is applied. A
    /// failure that may pass (a full disk, an I/O error) throws instead.
    ///
    /// - Returns: The changes left out, each with the store's reason; empty
    ///   when all of `batch` was applied.
    @discardableResult
    func commit(_ batch: StoreBatch) throws -> [UnstorableChange]

    /// Says where the promises are kept, for logs and `info` ("sqlite:/path").
    var location: String { get }
}

/// The changes of one group commit: promises to write and promises to remove.
///
/// A promise keeps its ``StoredPromise/sequence`` for life, and a removed id
/// made again gets a new one, so a store may key its rows by sequence alone —
/// new promises then land at the end of the table, not all over an index of
/// ids (which made every commit of the SQLite store write several times the
/// pages).
public struct StoreBatch: Sendable, Hashable {
    /// Each replaces the stored promise with its sequence.
    public var upserts: [StoredPromise]
    /// Applied before the upserts, so that an id removed and made again in
    /// one batch ends up stored once, under its new sequence.
    public var deletions: [StoreDeletion]
    /// Numbers that must never go back, whatever is removed: the registry's
    /// next sequence and next daemon-made id. A store keeps, for each name,
    /// the largest value any batch gave it, and ``StoreContents`` returns it.
    /// Without them a restart after retention dropped the newest promises
    /// handed out their daemon-made ids ("p7") again.
    public var counters: [String: Int]
    /// Step logs to write, each replacing the log stored under its sequence;
    /// applied after the upserts. A deletion removes the log of the promise
    /// it deletes too.
    public var logs: [StoredStepLog]
    /// Pool limits set at run time, each replacing the one stored for its pool.
    public var poolLimits: [StoredPoolLimit]

    public init(upserts: [StoredPromise] = [], deletions: [StoreDeletion] = [], counters: [String: Int] = [:],
                logs: [StoredStepLog] = [], poolLimits: [StoredPoolLimit] = []) {
        self.upserts = upserts
        self.deletions = deletions
        self.counters = counters
        self.logs = logs
        self.poolLimits = poolLimits
    }

    public var isEmpty: Bool { upserts.isEmpty && deletions.isEmpty && logs.isEmpty && poolLimits.isEmpty }
}

/// What ``PromiseStore/load()`` found: the promises to restore, and those
/// that could not be read and were set aside.
///
/// ```swift
/// let contents = try store.load()
/// registry.restore(contents)   // rejects what depends on contents.quarantined
/// ```
public struct StoreContents: Sendable, Hashable {
    /// In ascending ``StoredPromise/sequence``.
    public var promises: [StoredPromise]
    /// Every promise the store holds set aside, oldest first: those found by
    /// this load and those found by earlier ones and not yet removed.
    public var quarantined: [QuarantinedPromise]
    /// The largest value committed for each of ``StoreBatch/counters``.
    public var counters: [String: Int]
    /// The step logs of ``promises`` (by sequence and id), in no set order.
    public var logs: [StoredStepLog]
    /// The pool limits set at run time, by pool name, in no set order.
    public var poolLimits: [StoredPoolLimit]

    public init(promises: [StoredPromise] = [], quarantined: [QuarantinedPromise] = [], counters: [String: Int] = [:],
                logs: [StoredStepLog] = [], poolLimits: [StoredPoolLimit] = []) {
        self.promises = promises
        self.quarantined = quarantined
        self.counters = counters
        self.logs = logs
        self.poolLimits = poolLimits
    }
}

/// A stored promise that could not be loaded, kept apart for inspection
/// (docs/DURABILITY.md, "Quarantine"). Only its id, its sequence and the
/// reason are read: its document may be anything.
///
/// ```swift
/// QuarantinedPromise(id: "x128", sequence: 130, reason: "not valid JSON: nesting deeper than 512 levels",
///                    time: 1_700_000_000_000)
/// ```
public struct QuarantinedPromise: Sendable, Hashable {
    public var id: String
    public var sequence: Int
    /// Why it could not be loaded.
    public var reason: String
    /// When it was set aside: milliseconds since 1970.
    public var time: Int64

    public init(id: String, sequence: Int, reason: String, time: Int64) {
        self.id = id
        self.sequence = sequence
        self.reason = reason
        self.time = time
    }
}

/// A change that ``PromiseStore/commit(_:)`` left out because it can never
/// be stored: the promise (or deletion) it was for, and the store's reason.
///
/// ```swift
/// for change in try store.commit(batch) { print(change.id, change.reason) }  // "X", "string or blob too big"
/// ```
public struct UnstorableChange: Sendable, Hashable {
    public var id: String
    public var sequence: Int
    public var reason: String

    public init(id: String, sequence: Int, reason: String) {
        self.id = id
        self.sequence = sequence
        self.reason = reason
    }
}

/// A stored promise to remove: its id and the sequence it was stored under.
/// A deletion whose id and sequence match no stored promise removes nothing.
///
/// ```swift
/// try store.commit(StoreBatch(deletions: [StoreDeletion(id: "build", sequence: 7)]))
/// ```
public struct StoreDeletion: Sendable, Hashable {
    public var id: String
    public var sequence: Int

    public init(id: String, sequence: Int) {
        self.id = id
        self.sequence = sequence
    }
}

/// Why a store could not load or commit: shown to clients in -32603 errors.
public struct PromiseStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
