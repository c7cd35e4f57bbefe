/// A pool limit set at run time (`pool.set`, `promisectl pool NAME N`),
/// kept by the store so that a restart brings it back rather than the
/// limit the daemon was started with.
///
/// The limit the daemon was started with for the pool is kept beside it:
/// a daemon started again with the same options restores the limit set at
/// run time, and one started with another limit for that pool (the user
/// changed the unit's `--pool cc=8`) keeps the new start limit, the later
/// of the two decisions.
///
/// ```swift
/// StoredPoolLimit(pool: "cc", limit: 1, startLimit: 4)   // promised --pool cc=4, then pool.set cc 1
/// StoredPoolLimit(pool: "gpu", limit: 2, startLimit: nil) // made at run time
/// ```
public struct StoredPoolLimit: Sendable, Hashable {
    /// The pool's name.
    public var pool: String
    /// Its slots, 0 for a paused pool.
    public var limit: Int
    /// The limit the daemon that set it was started with for this pool
    /// (`--pool`, `--max-running-processes` for `default`); nil for a pool
    /// made at run time.
    public var startLimit: Int?

    public init(pool: String, limit: Int, startLimit: Int?) {
        self.pool = pool
        self.limit = limit
        self.startLimit = startLimit
    }
}
