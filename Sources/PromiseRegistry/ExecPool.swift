import PromiseJSON

/// One named pool of slots: a `then … exec` step takes one to run its
/// command, a `pool.acquire` caller (`promisectl run --pool`) takes one for
/// as long as it holds it, and whoever finds none free waits its turn, first
/// come first served (docs/PROTOCOL.md, "Pools"). Loop thread only.
///
/// A queue, not a refusal: with `--max-running-processes 2`, a refusal
/// would reject 19 of 21 compile steps of a C build ("too many running
/// processes"); `make -j` and task-spooler's `-S` make them wait instead,
/// and so does this.
///
/// ```swift
/// let pool = ExecPool(name: "cc", limit: 1)
/// let slot = pool.take(.connection(7, promiseID: nil), serial: 1)   // running 1
/// pool.enqueue(turn)                                                  // queued 1
/// pool.release(slot)                                                  // the caller pumps: turn starts
/// ```
final class ExecPool {
    let name: String
    /// Slots that may be held at once; 0 pauses the pool. Lowering it stops
    /// nothing that holds a slot: turns wait until fewer than it are held.
    var limit: Int
    /// The slots held now.
    private(set) var holders: [ObjectIdentifier: PoolSlot] = [:]
    /// Turns in the order they are served; withdrawn ones linger until
    /// they reach the head or the queue is compacted, so that withdrawing
    /// one (a cancelled step) costs no search through the others.
    private var queue: [PoolTurn] = []
    private var head = 0
    /// Live turns in `queue`.
    private(set) var queuedCount = 0
    /// Set when restored turns were appended out of ticket order.
    private var needsSort = false

    init(name: String, limit: Int) {
        precondition(limit >= 0, "a pool's limit is 0 or more")
        self.name = name
        self.limit = limit
    }

    var running: Int { holders.count }
    var hasFreeSlot: Bool { holders.count < limit }

    /// Takes a slot for `holder`; the caller has checked ``hasFreeSlot``
    /// (or is restarting a turn it owes one).
    func take(_ holder: PoolSlot.Holder, serial: Int) -> PoolSlot {
        let slot = PoolSlot(pool: name, holder: holder, serial: serial)
        holders[ObjectIdentifier(slot)] = slot
        return slot
    }

    /// Gives `slot` back; false when it was given back already.
    @discardableResult
    func release(_ slot: PoolSlot) -> Bool {
        guard !slot.isReleased, holders.removeValue(forKey: ObjectIdentifier(slot)) != nil else { return false }
        slot.isReleased = true
        return true
    }

    /// Puts `turn` at the end of the queue. `restored` turns keep the
    /// ticket they had before a restart and are put in ticket order.
    func enqueue(_ turn: PoolTurn, restored: Bool = false) {
        if restored, let last = queue.last, last.ticket > turn.ticket { needsSort = true }
        queue.append(turn)
        queuedCount += 1
    }

    /// Takes `turn` out of the queue; false when it was not in it.
    @discardableResult
    func withdraw(_ turn: PoolTurn) -> Bool {
        guard !turn.isWithdrawn, !turn.isServed else { return false }
        turn.isWithdrawn = true
        queuedCount -= 1
        assert(queuedCount >= 0, "pool \(name) withdrew a turn it did not hold")
        if queuedCount == 0 {
            queue.removeAll()
            head = 0
        }
        return true
    }

    /// The first live turn, without taking it.
    var first: PoolTurn? {
        sortIfNeeded()
        while head < queue.count, queue[head].isWithdrawn { head += 1 }
        compactIfNeeded()
        return head < queue.count ? queue[head] : nil
    }

    /// Takes the first live turn out of the queue, as served.
    func removeFirst() -> PoolTurn? {
        guard let turn = first else { return nil }
        head += 1
        turn.isServed = true
        queuedCount -= 1
        compactIfNeeded()
        return turn
    }

    /// The first `count` live turns, in the order they will be served.
    func waiting(upTo count: Int) -> [PoolTurn] {
        sortIfNeeded()
        var turns: [PoolTurn] = []
        var index = head
        while turns.count < count, index < queue.count {
            if !queue[index].isWithdrawn { turns.append(queue[index]) }
            index += 1
        }
        return turns
    }

    private func sortIfNeeded() {
        guard needsSort else { return }
        needsSort = false
        let live = queue[head...].filter { !$0.isWithdrawn }
        // Stable: turns with equal tickets keep the order they came in.
        queue = live.enumerated().sorted { ($0.element.ticket, $0.offset) < ($1.element.ticket, $1.offset) }
            .map(\.element)
        head = 0
    }

    private func compactIfNeeded() {
        guard head > 64, head * 2 > queue.count else { return }
        queue.removeFirst(head)
        head = 0
    }
}

/// A slot of an ``ExecPool`` held by a running step or a connection. Loop thread only.
package final class PoolSlot {
    package enum Holder {
        /// A `then … exec` step, by its child's id.
        case step(String)
        /// A `pool.acquire` caller, with the promise it said it runs for.
        case connection(UInt64, promiseID: String?)
    }

    let pool: String
    let holder: Holder
    /// When it was taken, among all slots: `info` lists holders in this order.
    let serial: Int
    var isReleased = false

    init(pool: String, holder: Holder, serial: Int) {
        self.pool = pool
        self.holder = holder
        self.serial = serial
    }
}

/// A place in an ``ExecPool``'s queue. Loop thread only.
final class PoolTurn {
    /// Its place: lower is served first. Kept across restarts for steps.
    let ticket: Int
    let holder: PoolSlot.Holder
    /// Starts what waited, with the slot it now holds. Nil for a step
    /// restored as queued whose parent's value has not reached it yet: the
    /// queue waits for it (it comes in the restart's first loop turns).
    var start: ((PoolSlot) -> Void)?
    /// Runs when it leaves the queue without being served.
    var onWithdraw: (() -> Void)?
    var isWithdrawn = false
    var isServed = false

    init(ticket: Int, holder: PoolSlot.Holder, start: ((PoolSlot) -> Void)?) {
        self.ticket = ticket
        self.holder = holder
        self.start = start
    }

    /// Still waiting in its queue.
    var isQueued: Bool { !isWithdrawn && !isServed }
}

extension PoolSlot.Holder {
    /// How `info` shows it: `{"step":id}` or `{"connection":n,"id":…}`.
    package var json: JSONValue {
        switch self {
        case .step(let id): ["step": .string(id)]
        case .connection(let connection, let promiseID):
            promiseID.map { ["connection": .int(Int(clamping: connection)), "id": .string($0)] }
                ?? ["connection": .int(Int(clamping: connection))]
        }
    }

    var connectionID: UInt64? {
        if case .connection(let id, _) = self { return id }
        return nil
    }
}

@available(*, unavailable)
extension ExecPool: Sendable {}

@available(*, unavailable)
extension PoolSlot: Sendable {}

@available(*, unavailable)
extension PoolTurn: Sendable {}
