import Logging
import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// Pools: concurrency limits that queue rather than refuse
/// (docs/PROTOCOL.md, "Pools").
///
/// A `then … exec` step takes a slot of its pool (`pool` param, else
/// `default`) to run its command and gives it back when the command has
/// exited, however it ended. A step that finds no free slot waits in its
/// pool's queue, first come first served, with `pool.acquire` callers of
/// the same pool; it is never rejected for lack of a slot. A queued step
/// whose child settles (cancelled, or settled by a client) leaves the
/// queue and never starts. A queued step is stored with its place
/// (``StoredPromise/queueTicket``), and a restart queues it again there.
extension Registry {
    // MARK: Steps

    /// Runs `start` with a slot of `job`'s pool now, or queues `job` until
    /// one is free. Returns the rejection of a step that cannot even queue
    /// (`maxQueued` turns wait already); `result` is the step's outcome, cancelled
    /// should the step leave the queue unserved.
    func admitExec(_ job: ExecJob, childID: String, result: Promise<JSONValue>,
                   start: @escaping (PoolSlot) -> Void) -> RemoteRejection? {
        let pool = poolForStep(job.pool)
        if let turn = job.turn, turn.isQueued {
            // Restored as queued: its place was kept, and the queue waited for it.
            turn.start = start
            turn.onWithdraw = { result.reject(CancellationError()) }
            pumpPool(pool)
            return nil
        }
        if pool.hasFreeSlot && pool.queuedCount == 0 && !pools.isHeld {
            start(pools.take(pool, for: .step(childID)))
            return nil
        }
        guard pools.queuedCount < limits.maxQueued else {
            let full = RegistryLimit.queued(limits.maxQueued)
            return RemoteRejection(code: RejectionCode.limitExceeded, message: "not run: \(full.message)",
                                   data: ["limit": .string(full.name), "value": .int(full.value)], origin: childID)
        }
        let turn = PoolTurn(ticket: pools.issueTicket(), holder: .step(childID), start: start)
        turn.onWithdraw = { result.reject(CancellationError()) }
        job.turn = turn
        pools.enqueue(turn, in: pool)
        // Its place is stored: a restarted daemon queues it again there.
        journal?.touch(childID)
        logger.debug("Step queued", metadata: [
            "promise.id": "\(childID)", "pool": "\(pool.name)", "pool.queued": "\(pool.queuedCount)",
        ])
        return nil
    }

    /// Takes a restored step that was queued when the daemon stopped back
    /// into its pool's queue, at its old place (`ticket`). Its turn is
    /// ready once its parent's value reaches it (``admitExec``); till then
    /// it holds up the turns behind it, as it did before.
    func requeueRestored(_ job: ExecJob, childID: String, ticket: Int) {
        let pool = poolForStep(job.pool)
        let turn = PoolTurn(ticket: ticket, holder: .step(childID), start: nil)
        job.turn = turn
        pools.noteRestored(ticket: ticket)
        // Past maxQueued too: what was queued stays queued.
        pools.enqueue(turn, in: pool, restored: true)
    }

    /// Takes `job` out of its pool's queue once its child has settled
    /// (cancelled, or settled by a client): it never starts.
    func watchQueuedTurn(of job: ExecJob, child: Promise<JSONValue>) {
        let registry = WeakLoopBound(self)
        let boxedJob = LoopBound(job)
        child.onSettled(on: executor) { _ in registry.value?.withdrawTurn(of: boxedJob.value) }
    }

    private func withdrawTurn(of job: ExecJob) {
        guard let turn = job.turn else { return }
        job.turn = nil
        guard let pool = pools[job.pool], pools.withdraw(turn, from: pool) else { return }
        logger.debug("Step left the queue", metadata: ["pool": "\(pool.name)", "pool.queued": "\(pool.queuedCount)"])
        // It may have been a restored turn holding up the others.
        pumpPool(pool)
    }

    /// The pool of a step: one a step names exists (`then` checks it), but
    /// a step restored after a restart may name a pool made at run time,
    /// which the restart forgot: it is made again with the default pool's limit.
    private func poolForStep(_ name: String) -> ExecPool {
        if let pool = pools[name] { return pool }
        let limit = pools[ExecPools.defaultName]?.limit ?? limits.maxRunningProcesses
        logger.info("A restored step names a pool this daemon was not started with: made with the default pool's limit",
                    metadata: ["pool": "\(name)", "pool.limit": "\(limit)"])
        return pools.pool(name, makingWithLimit: limit)
    }

    /// Starts the turns of `pool` that can start now, in order. Not while
    /// stopping: queued steps stay queued, for the restart.
    func pumpPool(_ pool: ExecPool) {
        guard !isStopping, !pools.isHeld else { return }
        while let (turn, slot, start) = pools.serveFirst(of: pool) {
            logger.debug("Slot taken", metadata: ["pool": "\(pool.name)", "pool.holder": "\(turn.holder.json)"])
            start(slot)
        }
    }

    /// Brings back the pool limits set at run time, before the steps that
    /// queue in them. A pool whose start limit (`--pool`,
    /// `--max-running-processes`) differs from the one it was set under
    /// keeps the new start limit, the later decision, and that is stored in
    /// its place. A stored row that no longer makes a valid pool is skipped
    /// and logged.
    func restorePoolLimits(_ stored: [StoredPoolLimit]) {
        for entry in stored {
            guard ExecPools.isValidName(entry.pool), (0...ExecPools.maxLimit).contains(entry.limit) else {
                logger.error("A stored pool limit is not valid: the pool keeps its start limit",
                             metadata: ["pool": "\(entry.pool)", "pool.limit": "\(entry.limit)"])
                continue
            }
            let start = startLimit(of: entry.pool)
            guard entry.startLimit == start else {
                logger.info("The daemon was started with another limit for a pool set at run time: it keeps the start limit",
                            metadata: ["pool": "\(entry.pool)", "pool.limit": "\(start.map(String.init) ?? "none")",
                                       "pool.setLimit": "\(entry.limit)"])
                if let start {
                    journal?.write(poolLimit: StoredPoolLimit(pool: entry.pool, limit: start, startLimit: start))
                }
                continue
            }
            if pools[entry.pool] == nil && pools.byName.count >= limits.maxPools {
                logger.error("A stored pool is past maxPools: not made again",
                             metadata: ["pool": "\(entry.pool)", "limit": "\(limits.maxPools)"])
                continue
            }
            pools.pool(entry.pool, makingWithLimit: entry.limit).limit = entry.limit
        }
    }

    /// The limit the daemon was started with for pool `name`, nil for one it was not started with.
    private func startLimit(of name: String) -> Int? {
        name == ExecPools.defaultName ? limits.maxRunningProcesses : limits.pools[name]
    }

    /// Holds every pool while a restart rebuilds the registry: with the
    /// `.inline` executor a restored step's parent hands it its value as it
    /// is rebuilt, before the steps queued ahead of it are back.
    func holdPools() {
        pools.isHeld = true
    }

    /// Starts what can start once every promise is back.
    func resumePools() {
        pools.isHeld = false
        for name in pools.byName.keys.sorted() {
            if let pool = pools[name] { pumpPool(pool) }
        }
    }

    /// Gives `slot` back and starts what waited for it.
    func releaseSlot(_ slot: PoolSlot) {
        guard pools.release(slot), let pool = pools[slot.pool] else { return }
        pumpPool(pool)
    }

    /// A step's command has ended (or will not start): one process fewer,
    /// and its slot back to its pool.
    func execEnded(holding slot: PoolSlot?) {
        runningProcesses -= 1
        assert(runningProcesses >= 0, "more exec commands ended than started")
        if let slot { releaseSlot(slot) }
    }

    // MARK: Methods

    /// Checks that a `then … exec` step's pool (nil: `default`) exists and
    /// that a step may still queue.
    func checkStepPool(_ name: String?) throws(RegistryError) {
        if let name { try existingPool(name) }
        if pools.queuedCount >= limits.maxQueued {
            throw .limitExceeded(.queued(limits.maxQueued))
        }
    }

    /// `pool.set` → the pool's limit and use. Makes the pool if it does not exist (up to
    /// `maxPools`); raising a limit starts what waited at once, lowering it
    /// stops nothing that runs.
    package func poolSet(_ command: PoolSetCommand) throws(RegistryError) -> PoolState {
        let name = command.pool
        let limit = command.limit
        if pools[name] == nil && pools.byName.count >= limits.maxPools {
            throw .limitExceeded(.pools(limits.maxPools))
        }
        let made = pools[name] == nil
        let pool = pools.pool(name, makingWithLimit: limit)
        let previous = pool.limit
        pool.limit = limit
        // Its answer waits for this write: an acknowledged limit survives a restart.
        journal?.write(poolLimit: StoredPoolLimit(pool: name, limit: limit, startLimit: startLimit(of: name)))
        logger.info(made ? "Pool made" : "Pool limit set",
                    metadata: ["pool": "\(name)", "pool.limit": "\(limit)", "pool.previous": "\(made ? "none" : "\(previous)")"])
        pumpPool(pool)
        return PoolState(pool: pool.name, limit: pool.limit, running: pool.running, queued: pool.queuedCount)
    }

    /// `pool.acquire` → the slots of the pool this connection holds, once this connection holds one more slot
    /// of it: at once when one is free and nobody waits, else when its turn
    /// comes. The slot is held until `pool.release` or until the connection
    /// closes. Returns nil when the answer comes later.
    package func poolAcquire(_ command: PoolAcquireCommand, _ call: RegistryCall) throws(RegistryError) -> PoolHolding? {
        let name = command.pool
        let pool = try existingPool(name)
        let promiseID = command.promiseID
        // A notification asks for a slot nobody would be told it holds.
        guard let answerLater = call.answerHoldingLater else { return nil }
        let session = try session(call.connectionID)
        if session.peer.isReserved { throw reserveRefusal("pool.acquire", closing: session.peer) }
        let connection = call.connectionID
        let holder = PoolSlot.Holder.connection(connection, promiseID: promiseID)
        if pool.hasFreeSlot && pool.queuedCount == 0 {
            _ = pools.take(pool, for: holder)
            return acquired(pool, by: connection)
        }
        guard pools.queuedCount < limits.maxQueued else {
            throw .limitExceeded(.queued(limits.maxQueued))
        }
        let turn = PoolTurn(ticket: pools.issueTicket(), holder: holder) { [weak self] _ in
            guard let self else { return }
            answerLater(.success(acquired(pool, by: connection)))
        }
        pools.enqueue(turn, in: pool)
        return nil
    }

    /// `pool.release`: gives back one slot of the pool this connection holds
    /// (`released` false when it holds none).
    package func poolRelease(_ command: PoolReleaseCommand, _ call: RegistryCall) throws(RegistryError) -> PoolHolding {
        let name = command.pool
        try existingPool(name)
        let slot = pools.connectionSlots[call.connectionID]?.last { $0.pool == name }
        if let slot { releaseSlot(slot) }
        return PoolHolding(pool: name, held: pools.slots(of: call.connectionID, in: name), released: slot != nil)
    }

    /// A closed connection gives back every slot it held and leaves every queue it waited in.
    func releasePools(of connection: UInt64) {
        if let turns = pools.connectionTurns[connection] {
            for (pool, turn) in turns { pools.withdraw(turn, from: pool) }
        }
        if let slots = pools.connectionSlots[connection] {
            for slot in slots { releaseSlot(slot) }
        }
    }

    // MARK: Helpers

    private func acquired(_ pool: ExecPool, by connection: UInt64) -> PoolHolding {
        PoolHolding(pool: pool.name, held: pools.slots(of: connection, in: pool.name))
    }

    /// Pool `name`, or -32602: steps and callers name only pools that
    /// exist, so that a misspelt name does not quietly make a pool of its own.
    @discardableResult
    private func existingPool(_ name: String) throws(RegistryError) -> ExecPool {
        guard let pool = pools[name] else {
            throw .noSuchPool(name)
        }
        return pool
    }
}
