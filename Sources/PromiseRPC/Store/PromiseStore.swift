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
/// try store.load().map(\.id)   // ["a"]
/// ```
public protocol PromiseStore: AnyObject, Sendable {
    /// Everything stored, in creation order (ascending ``StoredPromise/sequence``).
    /// Called once, before the daemon serves.
    func load() throws -> [StoredPromise]

    /// Applies `batch` atomically and durably: when this returns, all of it
    /// survives a crash or power cut; when it throws, none of it was applied.
    /// Called from one thread at a time.
    func commit(_ batch: StoreBatch) throws

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

    public init(upserts: [StoredPromise] = [], deletions: [StoreDeletion] = []) {
        self.upserts = upserts
        self.deletions = deletions
    }

    public var isEmpty: Bool { upserts.isEmpty && deletions.isEmpty }
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
