import PromiseJSON
import PromiseModel

/// The daemon's pools, by name, and what connections hold or wait for in
/// them. Loop thread only; the registry drives them (Registry+Pools.swift).
///
/// The `default` pool always exists: its limit is `maxRunningProcesses`
/// (`--max-running-processes`) and steps that name no pool use it. Others
/// come from `promised --pool NAME=N` and `pool.set`.
///
/// ```swift
/// var limits = DaemonLimits()
/// limits.pools = ["cc": 2]
/// let pools = ExecPools(limits: limits)
/// pools["cc"]?.limit      // 2
/// pools["default"]?.limit // 256
/// ```
package final class ExecPools {
    /// The pool of steps that name none.
    static let defaultName = DaemonLimits.defaultPoolName
    /// The largest limit a pool takes.
    package static let maxLimit = DaemonLimits.maxPoolLimit
    /// Longest pool name, in bytes.
    package static let maxNameBytes = DaemonLimits.maxPoolNameBytes
    /// Holders and waiting turns `info` lists per pool (it gives all the counts).
    static let listedPerPool = 16

    private(set) var byName: [String: ExecPool] = [:]
    /// Live turns over all pools, against `DaemonLimits.maxQueued`.
    var queuedCount = 0
    /// Set while a restart rebuilds the registry: nothing starts until every
    /// queued step is back at its place (``Registry/resumePools()``).
    var isHeld = false
    private var nextTicket = 1
    private var nextSlotSerial = 1
    /// Slots and queued turns by connection, so that a closed connection
    /// gives back what it held; connections that never used a pool are not here.
    var connectionSlots: [UInt64: [PoolSlot]] = [:]
    var connectionTurns: [UInt64: [(pool: ExecPool, turn: PoolTurn)]] = [:]

    /// Limits below 0 count as 0 (a paused pool): `promised` refuses them,
    /// but `DaemonLimits` is a plain value any caller may fill.
    init(limits: DaemonLimits) {
        for (name, limit) in limits.pools { byName[name] = ExecPool(name: name, limit: max(0, limit)) }
        byName[Self.defaultName] = ExecPool(name: Self.defaultName, limit: max(0, limits.maxRunningProcesses))
    }

    subscript(name: String) -> ExecPool? { byName[name] }

    /// Pool `name`, made with `limit` if it does not exist.
    func pool(_ name: String, makingWithLimit limit: @autoclosure () -> Int) -> ExecPool {
        if let pool = byName[name] { return pool }
        let pool = ExecPool(name: name, limit: limit())
        byName[name] = pool
        return pool
    }

    /// A fresh ticket, after every one handed out or restored.
    func issueTicket() -> Int {
        defer { nextTicket += 1 }
        return nextTicket
    }

    /// Keeps tickets handed out from now on after `ticket`, a restored one.
    func noteRestored(ticket: Int) {
        nextTicket = max(nextTicket, ticket + 1)
    }

    /// Takes a slot of `pool` for `holder`.
    func take(_ pool: ExecPool, for holder: PoolSlot.Holder) -> PoolSlot {
        defer { nextSlotSerial += 1 }
        let slot = pool.take(holder, serial: nextSlotSerial)
        if let connection = holder.connectionID { connectionSlots[connection, default: []].append(slot) }
        return slot
    }

    /// Gives `slot` back; false when it was given back already.
    @discardableResult
    func release(_ slot: PoolSlot) -> Bool {
        guard let pool = byName[slot.pool], pool.release(slot) else { return false }
        if let connection = slot.holder.connectionID, var slots = connectionSlots[connection] {
            slots.removeAll { $0 === slot }
            connectionSlots[connection] = slots.isEmpty ? nil : slots
        }
        return true
    }

    /// Queues `turn` in `pool`.
    func enqueue(_ turn: PoolTurn, in pool: ExecPool, restored: Bool = false) {
        pool.enqueue(turn, restored: restored)
        queuedCount += 1
        if let connection = turn.holder.connectionID { connectionTurns[connection, default: []].append((pool, turn)) }
    }

    /// Takes `turn` out of `pool`'s queue unserved; false when it was not queued.
    @discardableResult
    func withdraw(_ turn: PoolTurn, from pool: ExecPool) -> Bool {
        guard pool.withdraw(turn) else { return false }
        queuedCount -= 1
        forgetConnectionTurn(turn)
        turn.onWithdraw?()
        turn.onWithdraw = nil
        turn.start = nil
        return true
    }

    /// Takes `pool`'s first turn, as served, if it can start: a slot is
    /// free and it is ready (``PoolTurn/start``).
    func serveFirst(of pool: ExecPool) -> (PoolTurn, PoolSlot, (PoolSlot) -> Void)? {
        guard pool.hasFreeSlot, let turn = pool.first, let start = turn.start, pool.removeFirst() === turn else {
            return nil
        }
        queuedCount -= 1
        forgetConnectionTurn(turn)
        turn.start = nil
        turn.onWithdraw = nil
        return (turn, take(pool, for: turn.holder), start)
    }

    /// How many slots connection `connection` holds in `pool`.
    func slots(of connection: UInt64, in pool: String) -> Int {
        connectionSlots[connection]?.count { $0.pool == pool } ?? 0
    }

    private func forgetConnectionTurn(_ turn: PoolTurn) {
        guard let connection = turn.holder.connectionID, var turns = connectionTurns[connection] else { return }
        turns.removeAll { $0.turn === turn }
        connectionTurns[connection] = turns.isEmpty ? nil : turns
    }

    /// Whether `name` may name a pool (``DaemonLimits/isValidPoolName(_:)``).
    package static func isValidName(_ name: String) -> Bool { DaemonLimits.isValidPoolName(name) }

    /// `info`'s `pools`: per pool its limit, the slots held and turns
    /// queued, and the first ``listedPerPool`` holders and waiting turns.
    var uses: [String: PoolUse] {
        byName.mapValues { pool in
            PoolUse(
                limit: pool.limit, running: pool.running, queued: pool.queuedCount,
                holders: pool.holders.values.sorted { $0.serial < $1.serial }.prefix(Self.listedPerPool).map(\.holder),
                waiting: pool.waiting(upTo: Self.listedPerPool).map(\.holder))
        }
    }
}

@available(*, unavailable)
extension ExecPools: Sendable {}
