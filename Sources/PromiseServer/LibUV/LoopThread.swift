import Foundation
import Glibc
import Promise

/// A ``UVLoop`` on a dedicated thread, with the ``LoopExecutor`` that feeds it.
///
/// The loop is built on the creating thread (so that set-up errors, such as
/// a socket that cannot be bound, are thrown to the caller); from ``start(_:)``
/// on it belongs to the loop thread. ``stop()`` may be called from any thread.
///
/// ```swift
/// let thread = try LoopThread(name: "promised-loop")
/// thread.start { loop in /* create handles */ }
/// thread.executor.execute { print("on the loop") }
/// thread.stop()
/// _ = thread.waitUntilFinished(timeout: .seconds(5))
/// ```
final class LoopThread: @unchecked Sendable {  // `loop`, `wakeUp` and `drainSoon` are used by the creating thread until `start`, then by the loop thread only; `condition` guards `finished` and `started`.
    let loop: UVLoop
    let executor: LoopExecutor
    private let wakeUp: UVAsync
    private let drainSoon: UVLoopWatcher
    private let name: String
    private let condition = NSCondition()
    private var started = false
    private var finished = false

    init(name: String) throws(UVError) {
        self.name = name
        loop = try UVLoop()
        let executor = LoopExecutor()
        self.executor = executor
        wakeUp = try UVAsync(loop: loop) { executor.drain() }
        drainSoon = try UVLoopWatcher(.idle, loop: loop) { executor.drain() }
    }

    deinit {
        if !started {
            executor.shutDown()
            loop.closeAll()
        }
    }

    /// Starts the thread: `body` runs on it first, then the loop runs until
    /// ``stop()``. Call once.
    func start(_ body: @escaping @Sendable (UVLoop) -> Void) {
        condition.lock()
        precondition(!started, "LoopThread.start called twice")
        started = true
        condition.unlock()
        let thread = Thread { [self] in
            // libuv learns of child exits through SIGCHLD.
            UVSignal.unblock([SIGCHLD])
            executor.attach(wakeUp, drainSoon: drainSoon)
            body(loop)
            // Settling on the loop yields after 5 ms (as `TurnBudget`'s
            // slices do): a fan-out's rest goes on in later turns.
            withDrainBudget(DrainBudget(.milliseconds(5), resumingOn: executor)) {
                loop.run()
            }
            executor.shutDown()
            loop.closeAll()
            condition.lock()
            finished = true
            condition.broadcast()
            condition.unlock()
        }
        thread.name = name
        // The dispatcher parses nested JSON recursively: give it room.
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Asks the loop to end: it finishes the current iteration, runs the
    /// queued work, closes every handle, and the thread ends.
    func stop() {
        executor.execute { [self] in
            loop.stop()
        }
    }

    /// Blocks until the loop thread has ended, at most `timeout`. Returns false on timeout.
    @discardableResult
    func waitUntilFinished(timeout: Duration? = nil) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard started else { return true }
        if let timeout {
            let deadline = Date(timeIntervalSinceNow: Double(timeout.components.seconds)
                + Double(timeout.components.attoseconds) / 1e18)
            while !finished {
                if !condition.wait(until: deadline) { return finished }
            }
        } else {
            while !finished { condition.wait() }
        }
        return true
    }

    /// Runs `body` on the loop thread with the loop.
    func onLoop(_ body: @escaping @Sendable (UVLoop) -> Void) {
        executor.execute { [self] in
            body(loop)
        }
    }
}
