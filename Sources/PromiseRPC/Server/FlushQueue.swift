/// Connections with answers waiting to be written, flushed once per loop
/// iteration just before the loop sleeps (as Redis does in `beforeSleep`).
///
/// Every answer produced while handling one read, one timer or one batch of
/// executor work for a client leaves in one `writev` instead of one system
/// call per answer; pipelined requests are answered at the cost of a memory
/// copy, and a lone request waits only for the rest of the current loop
/// iteration. Loop-thread only.
final class FlushQueue {
    private var waiting: [Connection] = []
    private var spare: [Connection] = []
    private var prepare: UVPrepare?

    init(loop: UVLoop) throws(UVError) {
        prepare = try UVPrepare(loop: loop) { [weak self] in
            self?.flushAll()
        }
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
        while !waiting.isEmpty {
            swap(&waiting, &spare)
            for connection in spare {
                connection.flush()
            }
            spare.removeAll(keepingCapacity: true)
        }
        prepare?.stop()
    }

    func close() {
        prepare?.close()
        prepare = nil
        waiting = []
    }
}

@available(*, unavailable)
extension FlushQueue: Sendable {}
