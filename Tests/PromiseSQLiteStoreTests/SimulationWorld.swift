import Foundation
import Logging
import Promise
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
import PromiseSQLiteStore
@testable import PromiseServer
@testable import PromiseStore
import PromiseTestSupport

/// The longest turn of the simulated loop thread: a line handled, one
/// piece of queued work run, or one timer fired. Measured in CPU time of
/// the thread, which other processes on a shared machine do not stretch
/// as they do the wall clock.
final class TurnMeter {
    private(set) var longest: Duration = .zero

    /// Runs `body` as one turn.
    func turn(_ body: () -> Void) {
        let started = Self.threadCPUTime()
        body()
        longest = max(longest, Self.threadCPUTime() - started)
    }

    /// Starts a new measure (at each step).
    func reset() { longest = .zero }

    /// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
    static func threadCPUTime() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}

/// The registry's clock, shared by every life of the simulated daemon.
final class SimulationClock {
    /// Milliseconds since 1970.
    var now: Int64 = 1_800_000_000_000
}

/// Timers that fire when the simulation moves its clock; no processes
/// (the simulation makes no `then … exec` children).
final class SimulationLoop: LoopServices {
    final class Timer: ScheduledTimer {
        let due: Int64
        let order: Int
        var body: (() -> Void)?
        init(due: Int64, order: Int, body: @escaping () -> Void) {
            self.due = due
            self.order = order
            self.body = body
        }
        func cancel() { body = nil }
    }

    struct NoProcesses: Error, CustomStringConvertible {
        var description: String { "the simulation runs no processes" }
    }

    let clock: SimulationClock
    let meter: TurnMeter
    private var timers: [Timer] = []
    private var made = 0

    init(clock: SimulationClock, meter: TurnMeter) {
        self.clock = clock
        self.meter = meter
    }

    func schedule(afterMilliseconds milliseconds: UInt64, _ body: @escaping () -> Void) -> any ScheduledTimer {
        made += 1
        let timer = Timer(due: clock.now + Int64(clamping: milliseconds), order: made, body: body)
        timers.append(timer)
        return timer
    }

    func launch(_ spec: ProcessSpec, onExit: @escaping (ProcessOutcome) -> Void) throws -> any RunningProcess {
        throw NoProcesses()
    }

    /// Fires the timers due by now, earliest first, and those they schedule for now.
    func fireDue() {
        while true {
            timers.removeAll { $0.body == nil }
            let due = timers.filter { $0.due <= clock.now }.sorted { ($0.due, $0.order) < ($1.due, $1.order) }
            guard !due.isEmpty else { return }
            for timer in due {
                let body = timer.body
                timer.body = nil
                if let body { meter.turn(body) }
            }
        }
    }

    /// Moves the clock on, firing what comes due on the way, in order.
    func advance(by milliseconds: Int64) {
        let end = clock.now + milliseconds
        fireDue()
        while let next = timers.filter({ $0.body != nil && $0.due <= end }).map(\.due).min() {
            clock.now = max(clock.now, next)
            fireDue()
        }
        clock.now = end
        fireDue()
    }
}

/// Messages sent to every simulated client, in the order sent.
final class SimulationOutbox {
    var messages: [(client: Int, bytes: [UInt8])] = []
    var malformed: [String] = []
}

/// One simulated client's connection.
final class SimulationPeer: RPCPeer {
    let connectionID: UInt64
    let client: Int
    var isOpen = true
    private let outbox: SimulationOutbox

    init(connectionID: UInt64, client: Int, outbox: SimulationOutbox) {
        self.connectionID = connectionID
        self.client = client
        self.outbox = outbox
    }

    func send(_ line: [UInt8]) -> Bool {
        guard isOpen else { return false }
        let newline = UInt8(ascii: "\n")
        // memchr: a byte-by-byte search of a megabyte answer in a debug
        // build would take longer than the daemon's whole turn.
        let firstNewline = line.withUnsafeBytes { bytes -> Int? in
            guard let start = bytes.baseAddress, let found = memchr(start, Int32(newline), bytes.count) else { return nil }
            return UnsafeRawPointer(found) - start
        }
        if line.last != newline || firstNewline != line.count - 1 {
            outbox.malformed.append("client \(client) was sent a message that is not one line: "
                + SimulationModel.show(line))
        }
        outbox.messages.append((client, line.last == newline ? Array(line.dropLast()) : line))
        return true
    }
}

/// The SQLite store, behind a switch: closing it releases the database (and
/// its exclusive lock) at once, whatever still holds the registry of a life
/// that ended, as the kernel does for a killed daemon.
final class SimulationStore: PromiseStore, @unchecked Sendable {  // `lock` guards `store`.
    private let lock = NSLock()
    private var store: SQLitePromiseStore?
    let location: String

    init(_ store: SQLitePromiseStore) {
        self.store = store
        location = store.location
    }

    private func open() throws -> SQLitePromiseStore {
        guard let store = lock.withLock({ store }) else { throw PromiseStoreError("the simulated daemon has stopped") }
        return store
    }

    func load() throws -> StoreContents { try open().load() }
    @discardableResult
    func commit(_ batch: StoreBatch) throws -> [UnstorableChange] { try open().commit(batch) }
    func close() { lock.withLock { store = nil } }
}

/// One life of the simulated daemon: the real SQLite store, group commit,
/// registry and dispatcher, with the simulation's clock and clients.
final class SimulationDaemon {
    let loop: SimulationLoop
    /// The loop thread's queue: the registry's promise handlers, the
    /// dispatcher's later batch slices and group commit's cuts all run here,
    /// one piece per turn, as on the daemon's loop.
    let journalLoop = RPCManualExecutor()
    let meter: TurnMeter
    /// The daemon's loop thread runs under this budget: settling and
    /// cancelling hand what is left after it to the next turns.
    let drainBudget: DrainBudget
    let store: SimulationStore
    let registry: Registry
    let dispatcher: Dispatcher
    var peers: [SimulationPeer] = []
    let restored: Registry.RestoreSummary

    /// Opens the store in `directory`, loads it and restores a registry from it.
    init(directory: String, limits: DaemonLimits, retain: Int64?, clock: SimulationClock, meter: TurnMeter,
         outbox: SimulationOutbox, clients: Int, nextConnection: inout UInt64) throws {
        let logger = Logger(label: "simulation") { _ in SwiftLogNoOpLogHandler() }
        self.meter = meter
        drainBudget = DrainBudget(.milliseconds(5), resumingOn: journalLoop)
        loop = SimulationLoop(clock: clock, meter: meter)
        store = SimulationStore(try SQLitePromiseStore(directory: directory))
        let loaded: StoreContents
        do {
            loaded = try store.load()
        } catch {
            store.close()
            throw error
        }
        let journal = GroupCommit(store: store, loop: journalLoop, writer: .inline, services: loop, logger: logger)
        registry = Registry(limits: limits, services: loop, executor: journalLoop, journal: journal, logger: logger)
        registry.now = { clock.now }
        if let retain { registry.retain(forMilliseconds: retain) }
        restored = registry.restore(loaded)
        dispatcher = Dispatcher(registry: registry, limits: limits, logger: logger)
        for client in 0...clients {
            nextConnection += 1
            let peer = SimulationPeer(connectionID: nextConnection, client: client, outbox: outbox)
            peers.append(peer)
            dispatcher.connectionOpened(peer)
        }
        settle()
    }

    /// Handles `line` as the loop's turn that reads it.
    func handle(line: [UInt8], from peer: SimulationPeer) {
        withDrainBudget(drainBudget) {
            meter.turn { dispatcher.handle(line: line, from: peer) }
        }
    }

    /// Moves the clock on, firing the timers that come due, as the loop does.
    func advance(by milliseconds: Int64) {
        withDrainBudget(drainBudget) { loop.advance(by: milliseconds) }
        settle()
    }

    /// Runs the loop's later turns: handlers, batch slices, cuts, commits,
    /// the answers they held, and timers now due.
    func settle() {
        withDrainBudget(drainBudget) {
            repeat {
                while !journalLoop.isEmpty { meter.turn { journalLoop.runNext() } }
                loop.fireDue()
            } while !journalLoop.isEmpty
        }
    }

    /// A client closes its connection and opens a new one.
    func reconnect(_ client: Int, nextConnection: inout UInt64, outbox: SimulationOutbox) {
        let old = peers[client]
        old.isOpen = false
        dispatcher.connectionClosed(old)
        nextConnection += 1
        let peer = SimulationPeer(connectionID: nextConnection, client: client, outbox: outbox)
        peers[client] = peer
        dispatcher.connectionOpened(peer)
        settle()
    }

    /// A clean stop: what is held is committed and answered; then the store closes.
    /// - Returns: false when the stop did not finish.
    func stop() -> Bool {
        var finished = false
        dispatcher.stop { finished = true }
        settle()
        for peer in peers { peer.isOpen = false }
        store.close()
        return finished
    }

    /// kill -9: nothing more runs, nothing more is written.
    func crash() {
        for peer in peers { peer.isOpen = false }
        store.close()
    }
}
