import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Traffic beside a simulation step that would hold up or exhaust the
/// daemon if it let it: a flood of connections opened and closed as fast as
/// two threads can, and subscribers that never read while a writer sends
/// large `progress` messages to the id they watch. The simulation's probe
/// measures meanwhile what any other client waits; the driver checks
/// memory after the step.
struct SimulationHostileTraffic {
    let socketPath: String
    /// A pending id the model knows (``SimulationModel/driverTopic(client:)``).
    let topic: String

    /// What one run did; `problem` says what went wrong for the writer, a
    /// client that reads its answers and so must be served throughout.
    struct Outcome {
        var connectionsFlooded = 0
        var progressSent = 0
        var problem: String?
    }

    /// Runs both shapes at once for `duration`; returns once every
    /// connection it opened is closed.
    func run(for duration: Duration, silentReaders: Int, messageBytes: Int = 60_000) -> Outcome {
        let deadline = ContinuousClock.now + duration
        let flooded = FloodCounter()
        let floods = (0..<2).map { _ in
            let thread = Thread { [socketPath] in
                while ContinuousClock.now < deadline {
                    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                    if fd >= 0 {
                        if UnixSocketAddress(path: socketPath)?.connect(fd) == 0 { flooded.add() }
                        close(fd)
                    }
                }
                flooded.finish()
            }
            thread.start()
            return thread
        }
        var outcome = Outcome()
        var silent: [SimulationSocket] = []
        let subscribe = Array(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"ids":"#.utf8)
            + JSONValue.array([.string(topic)]).serialized() + Array("}}".utf8)
        for _ in 0..<silentReaders {
            guard let reader = try? SimulationSocket(path: socketPath) else { continue }
            var small: Int32 = 4096
            setsockopt(reader.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            reader.send(subscribe)
            silent.append(reader)
        }
        guard let writer = try? SimulationSocket(path: socketPath) else {
            silent.removeAll()
            flooded.waitForAll(floods.count)
            outcome.problem = "the progress writer could not connect"
            return outcome
        }
        let message = JSONValue.string(String(repeating: "m", count: messageBytes)).serialized()
        while ContinuousClock.now < deadline {
            outcome.progressSent += 1
            let fraction = Double(outcome.progressSent) / 1_000_000
            let line = Array(#"{"jsonrpc":"2.0","id":\#(outcome.progressSent),"method":"progress","params":{"id":"#.utf8)
                + JSONValue.string(topic).serialized() + Array(#","progress":\#(fraction),"message":"#.utf8)
                + message + Array("}}".utf8)
            guard writer.send(line), let answer = writer.readLine(milliseconds: 20_000) else {
                outcome.problem = "the progress writer, which reads its answers, got none within 20 s"
                break
            }
            let parsed = try? JSONValue(parsing: answer)
            if parsed?["result"] == nil {
                // The topic settled meanwhile (a step cancelled or resolved it): nothing more to send.
                if parsed?["error"]?["code"] == -32002 { break }
                outcome.problem = "progress of \(topic) was answered \(SimulationModel.show(answer, limit: 300))"
                break
            }
        }
        silent.removeAll()
        flooded.waitForAll(floods.count)
        outcome.connectionsFlooded = flooded.total
        return outcome
    }
}

/// Connections the flood threads made, and a wait for both threads to end.
private final class FloodCounter: @unchecked Sendable {  // `lock` guards both counts.
    private let lock = NSCondition()
    private var made = 0
    private var finished = 0

    var total: Int { lock.withLock { made } }

    func add() { lock.withLock { made += 1 } }

    func finish() {
        lock.withLock {
            finished += 1
            lock.broadcast()
        }
    }

    func waitForAll(_ threads: Int) {
        lock.lock()
        while finished < threads { lock.wait() }
        lock.unlock()
    }
}
