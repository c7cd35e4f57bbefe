/// Where the answer to a request that the registry answers later goes:
/// a `wait` for a pending promise, a `pool.acquire` that queues. The
/// dispatch layer makes one per such request and writes the answer.
package protocol LaterAnswers {
    /// The answer to a `wait`: the promise's record as JSON text, or the
    /// error that ends the wait.
    func answer(record outcome: Result<[UInt8], RegistryError>)
    /// The answer to a `pool.acquire`: the slots now held, or the error.
    func answer(holding outcome: Result<PoolHolding, RegistryError>)
}
