import PromiseModel
import PromiseRPC

/// The connections read in one loop turn, read once more, without waiting,
/// when the turn ends, just before the loop waits for I/O (the
/// ``FlushQueue`` runs it then): what their clients sent while the turn
/// ran is handled at once, in the order the turn read them.
///
/// Left to epoll, those requests would wait for the next turn, and in an
/// order that is not the order they came in. Level-triggered, as libuv uses
/// it, epoll hands out first the connections it reported at the last wait,
/// in that order, and after them those that became ready since. The daemon
/// answers each request as it handles it, so with many busy clients nearly
/// all are ready at every wait and a turn lasts as long as it takes to
/// answer them all; a client whose next request comes just after a wait
/// goes to the back of the turn after, and waits about a turn longer than
/// the others. Reading ahead takes that extra turn out of the slowest
/// pairs' times, and a read here seldom finds nothing (docs/PERFORMANCE.md).
///
/// Only when the turn read more than one connection: a lone client sends
/// its next request after it has read its answer, later than this, so its
/// read would find nothing, a system call spent per request; and the turn's
/// end is not run for it (the first answer to a read is written at once,
/// without it: see `Connection.send(line:)`), which would add work to every
/// pair (docs/PERFORMANCE.md).
///
/// Loop-thread only.
final class ReadAhead {
    // `@exclusivity(unchecked)` for the reason given in `Registry`: loop
    // thread only, no overlapping access, a runtime check per access.
    /// Connections read in this turn, in the order they were read.
    @exclusivity(unchecked) private var readers: [Connection] = []
    /// Last turn's, being read again; kept to reuse its storage.
    @exclusivity(unchecked) private var reading: [Connection] = []

    /// Whether this turn read more than one connection, so that its end
    /// must come to read them again.
    var needsTurnEnd: Bool { readers.count > 1 }

    /// `connection` was read for the first time in this turn. Returns
    /// ``needsTurnEnd``.
    func didRead(_ connection: Connection) -> Bool {
        readers.append(connection)
        return needsTurnEnd
    }

    /// The turn ends: reads each connection it read once more, in order,
    /// if it read more than one. What is read now counts for the next turn.
    func readAgain() {
        swap(&readers, &reading)
        if reading.count > 1 {
            for connection in reading {
                connection.readAhead()
            }
        }
        reading.removeAllKeepingStorage()
    }

    func close() {
        readers = []
        reading = []
    }
}

@available(*, unavailable)
extension ReadAhead: Sendable {}
