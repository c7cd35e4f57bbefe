/// `pool.set`: makes pool `pool` or sets its limit.
struct PoolSetCommand {
    var pool: String
    /// Slots, 0 to ``ExecPools/maxLimit``.
    var limit: Int
}

/// `pool.acquire`: one more slot of `pool` for the calling connection.
struct PoolAcquireCommand {
    var pool: String
    /// The promise the slot runs for, shown to others.
    var promiseID: String?
}

/// `pool.release`: gives back one slot of `pool` the calling connection holds.
struct PoolReleaseCommand {
    var pool: String
}
