import Foundation
import Glibc
import Logging
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseServer
import Synchronization
import Testing

/// The signal thread is signalled directly (`Watcher.raise`): a signal sent to
/// the test process could reach another thread, where it would end the run.
@Suite("Stopping on SIGTERM within a second", .timeLimit(.minutes(5)))
struct StopSignalsTests {
    private final class Record: Sendable {
        let stops = Atomic<Int>(0)
        let exitStatus = Atomic<Int32>(-1)
        let exited = DispatchSemaphore(value: 0)
    }

    private let logger = Logger(label: "test")

    @Test("a loop that does not start stopping within a second is left: the process exits with status 1")
    func stuckLoopExits() {
        let record = Record()
        let watcher = StopSignals.watch(
            stop: { record.stops.add(1, ordering: .relaxed) },
            acknowledge: { _ in },  // The loop never gets to it.
            logger: logger,
            exit: { status in
                record.exitStatus.store(status, ordering: .relaxed)
                record.exited.signal()
            })
        let sent = ContinuousClock.now
        watcher.raise(SIGTERM)
        #expect(record.exited.wait(timeout: .now() + 5) == .success)
        let waited = ContinuousClock.now - sent
        #expect(waited >= .milliseconds(950))
        #expect(waited < .seconds(4))
        #expect(record.stops.load(ordering: .relaxed) == 1)
        #expect(record.exitStatus.load(ordering: .relaxed) == 1)
    }

    @Test("a loop that starts stopping is left to finish; a second signal exits at once")
    func secondSignalExits() {
        let record = Record()
        let watcher = StopSignals.watch(
            stop: { record.stops.add(1, ordering: .relaxed) },
            acknowledge: { started in started() },
            logger: logger,
            exit: { status in
                record.exitStatus.store(status, ordering: .relaxed)
                record.exited.signal()
            })
        watcher.raise(SIGINT)
        // Stopping began: no exit, however long the stop takes.
        #expect(record.exited.wait(timeout: .now() + 1.5) == .timedOut)
        #expect(record.stops.load(ordering: .relaxed) == 1)
        let sent = ContinuousClock.now
        watcher.raise(SIGTERM)
        #expect(record.exited.wait(timeout: .now() + 5) == .success)
        #expect(ContinuousClock.now - sent < .milliseconds(900))
        #expect(record.exitStatus.load(ordering: .relaxed) == 1)
    }

    @Test("a stop that holds the loop for longer than the grace still counts as started: no exit")
    func longStopIsNotStuck() {
        let record = Record()
        // The loop: one serial queue, on which the stop takes two seconds.
        let loop = DispatchQueue(label: "loop")
        let watcher = StopSignals.watch(
            stop: {
                record.stops.add(1, ordering: .relaxed)
                loop.async { Thread.sleep(forTimeInterval: 2) }
            },
            acknowledge: { started in loop.async { started() } },
            logger: logger,
            exit: { status in
                record.exitStatus.store(status, ordering: .relaxed)
                record.exited.signal()
            })
        watcher.raise(SIGTERM)
        #expect(record.exited.wait(timeout: .now() + 2.5) == .timedOut)
        #expect(record.stops.load(ordering: .relaxed) == 1)
        #expect(record.exitStatus.load(ordering: .relaxed) == -1)
    }
}
