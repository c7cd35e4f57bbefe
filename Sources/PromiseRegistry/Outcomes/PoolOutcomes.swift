/// A pool's limit and use, as `pool.set` answers.
package struct PoolState: Hashable {
    package var pool: String
    package var limit: Int
    /// Slots held.
    package var running: Int
    /// Turns waiting for a slot.
    package var queued: Int
}

/// The slots of a pool a connection holds after `pool.acquire` or `pool.release`.
package struct PoolHolding: Hashable {
    package var pool: String
    package var held: Int
    /// For `pool.release`: whether it gave a slot back; nil for `pool.acquire`.
    package var released: Bool?
}
