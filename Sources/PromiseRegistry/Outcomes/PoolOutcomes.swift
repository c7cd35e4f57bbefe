/// A pool's limit and use, as `pool.set` answers.
struct PoolState: Hashable {
    var pool: String
    var limit: Int
    /// Slots held.
    var running: Int
    /// Turns waiting for a slot.
    var queued: Int
}

/// The slots of a pool a connection holds after `pool.acquire` or `pool.release`.
struct PoolHolding: Hashable {
    var pool: String
    var held: Int
    /// For `pool.release`: whether it gave a slot back; nil for `pool.acquire`.
    var released: Bool?
}
