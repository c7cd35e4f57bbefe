import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Synchronization

/// A second client that asks the daemon `info` every 50 ms on a connection of
/// its own and records how long each answer took: how long a heavy request on
/// another connection holds everyone else. ``stop()`` ends it and returns the
/// figures.
final class E2EPinger: Sendable {
    struct Figures: CustomStringConvertible {
        let latencies: [Duration]
        var count: Int { latencies.count }
        var worst: Duration { latencies.max() ?? .zero }
        var p99: Duration {
            guard !latencies.isEmpty else { return .zero }
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
        }
        var description: String { "\(count) pings, p99 \(p99), worst \(worst)" }
    }

    private let stopping = Atomic<Bool>(false)
    private let result = Mutex<Figures?>(nil)
    private let failure = Mutex<String?>(nil)

    /// Connects and starts pinging on a thread of its own.
    init(socketPath: String) throws {
        let connection = try E2ERawConnection(path: socketPath)
        let box = UncheckedBox(connection)
        let thread = Thread { [self] in run(box.value) }
        thread.start()
    }

    private func run(_ connection: E2ERawConnection) {
        var latencies: [Duration] = []
        var id = 0
        let clock = ContinuousClock()
        while !stopping.load(ordering: .relaxed) {
            id += 1
            let start = clock.now
            connection.writeLine(#"{"jsonrpc":"2.0","id":\#(id),"method":"info"}"#)
            // A stalled daemon is a result too: the wait is measured, not cut short.
            guard let answer = try? connection.readMessage(timeout: .seconds(120)), answer["id"] == .int(id) else {
                failure.withLock { $0 = "ping \(id) got no answer" }
                break
            }
            latencies.append(clock.now - start)
            Thread.sleep(forTimeInterval: 0.05)
        }
        result.withLock { $0 = Figures(latencies: latencies) }
    }

    /// Stops pinging and returns the figures, or throws if a ping went unanswered.
    func stop() throws -> Figures {
        stopping.store(true, ordering: .relaxed)
        let deadline = ContinuousClock.now + .seconds(130)
        while ContinuousClock.now < deadline {
            if let figures = result.withLock({ $0 }) {
                if let failure = failure.withLock({ $0 }) { throw E2EHarnessError(failure) }
                return figures
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        throw E2EHarnessError("the pinger did not stop")
    }
}

/// Hands a connection to the pinger's thread, which alone uses it from then on.
private struct UncheckedBox<Value>: @unchecked Sendable {  // moved to one thread, used there only
    let value: Value
    init(_ value: Value) { self.value = value }
}
