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

    private func flushAll() {
        swap(&waiting, &spare)
        for connection in spare {
            connection.flush()
        }
        spare.removeAll(keepingCapacity: true)
        if waiting.isEmpty {
            prepare?.stop()
        }
    }

    func close() {
        prepare?.close()
        prepare = nil
        waiting = []
    }
}

@available(*, unavailable)
extension FlushQueue: Sendable {}
