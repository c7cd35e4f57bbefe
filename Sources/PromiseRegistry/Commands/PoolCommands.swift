/// `pool.set`: makes pool `pool` or sets its limit.
package struct PoolSetCommand {
    package var pool: String
    /// Slots, 0 to ``ExecPools/maxLimit``.
    package var limit: Int

    package init(pool: String, limit: Int) {
        self.pool = pool
        self.limit = limit
    }
}

/// `pool.acquire`: one more slot of `pool` for the calling connection.
package struct PoolAcquireCommand {
    package var pool: String
    /// The promise the slot runs for, shown to others.
    package var promiseID: String?

    package init(pool: String, promiseID: String?) {
        self.pool = pool
        self.promiseID = promiseID
    }
}

/// `pool.release`: gives back one slot of `pool` the calling connection holds.
package struct PoolReleaseCommand {
    package var pool: String

    package init(pool: String) {
        self.pool = pool
    }
}
