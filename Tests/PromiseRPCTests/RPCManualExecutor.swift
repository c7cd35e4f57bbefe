import Foundation
import Promise

/// An executor that queues work until ``drain()``: the loop thread's turns,
/// played by the test. Tests/PromiseSQLiteStoreTests holds a symbolic link
/// to this file, for the simulation.
final class RPCManualExecutor: Executor, @unchecked Sendable {  // `lock` guards `queue`.
    private let lock = NSLock()
    private var queue: [@Sendable () -> Void] = []

    func execute(_ work: @escaping @Sendable () -> Void) {
        lock.withLock { queue.append(work) }
    }

    /// True when no work is queued.
    var isEmpty: Bool { lock.withLock { queue.isEmpty } }

    /// Runs the work queued now, not what it queues: one loop turn.
    func runTurn() {
        let turn = lock.withLock { () -> [@Sendable () -> Void] in
            defer { queue = [] }
            return queue
        }
        for work in turn { work() }
    }

    /// Runs queued work, and what that work queues, until none is left.
    func drain() {
        while let work = lock.withLock({ queue.isEmpty ? nil : queue.removeFirst() }) { work() }
    }
}
