import PromiseModel
import PromiseRPC

/// Connections with answers waiting to be written, flushed once per loop
/// iteration just before the loop sleeps (as Redis does in `beforeSleep`).
///
/// A connection writes the first message of a turn itself, at once (see
/// `Connection.send`); what it is sent after that, until this queue runs,
/// waits here. So the answers to a read of many pipelined requests leave in
/// two writes rather than one system call per answer, at the cost of a
/// memory copy, and a lone request or notification is not held at all.
///
/// A turn's end is also when the connections read in it, if more than
/// one, are read once more (``ReadAhead``), before what is waiting is
/// flushed: the answers to what is read then leave in the same flush.
/// Loop-thread only.
final class FlushQueue {
    // `@exclusivity(unchecked)` for the reason given in `Registry`: loop
    // thread only, no overlapping access, a runtime check per access.
    /// Counts the runs of this queue: a turn ends when the loop is about to
    /// sleep after a connection wrote at once or several were read.
    /// ``Connection`` notes the turn it last read in.
    @exclusivity(unchecked) private(set) var turn: UInt64 = 0
    @exclusivity(unchecked) private var waiting: [Connection] = []
    @exclusivity(unchecked) private var spare: [Connection] = []
    @exclusivity(unchecked) private var prepare: UVLoopWatcher?
    private let readAhead = ReadAhead()

    init(loop: UVLoop) throws(UVError) {
        // Unowned: this queue owns the watcher and closes it (``close()``)
        // before it goes, so the watcher never outlives it. A weak capture
        // would cost a runtime-checked read of its box and a weak load per
        // loop turn (docs/PERFORMANCE.md).
        prepare = try UVLoopWatcher(.prepare, loop: loop) { [unowned self] in
            flushAll()
        }
    }

    /// The current turn, when a connection whose last write at once was in
    /// turn `lastTurn` may write at once now: the first time in this turn.
    func directWriteTurn(after lastTurn: UInt64?) -> UInt64? {
        guard lastTurn != turn else { return nil }
        // The turn must end before the loop sleeps, or the connection's next
        // message, in a later iteration, would wait for no reason.
        prepare?.start()
        return turn
    }

    /// `connection` was read for the first time in this turn: it is read
    /// again when the turn ends, if it is not the turn's only one (see
    /// ``ReadAhead``).
    func didRead(_ connection: Connection) {
        if readAhead.didRead(connection) { prepare?.start() }
    }

    /// Flushes `connection` before the loop next waits for I/O.
    func schedule(_ connection: Connection) {
        waiting.append(connection)
        prepare?.start()
    }

    /// Flushes until nothing is waiting. A flush can queue more output
    /// (a connection resuming after back-pressure handles the lines it held
    /// back), and the loop may sleep right after this callback, so what is
    /// queued meanwhile is flushed here rather than left for a later turn.
    private func flushAll() {
        turn &+= 1
        readAhead.readAgain()
        while !waiting.isEmpty {
            swap(&waiting, &spare)
            for connection in spare {
                connection.flush()
            }
            // Popped, not `removeAll(keepingCapacity:)`: its generic path
            // destroys the elements through their metadata.
            spare.removeAllKeepingStorage()
        }
        // What was read again counts for the next turn, which must end too.
        if !readAhead.needsTurnEnd { prepare?.stop() }
    }

    func close() {
        prepare?.close()
        prepare = nil
        waiting = []
        readAhead.close()
    }
}

@available(*, unavailable)
extension FlushQueue: Sendable {}
