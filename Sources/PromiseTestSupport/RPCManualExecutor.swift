import Foundation
import Promise

/// An executor that queues work until ``drain()``: the loop thread's turns,
/// played by the test.
package final class RPCManualExecutor: Executor, @unchecked Sendable {  // `lock` guards `queue` and `head`.
    private let lock = NSLock()
    private var queue: [@Sendable () -> Void] = []
    /// Index of the first piece not run yet: taking work from the front
    /// stays constant time when a drain runs hundreds of thousands of pieces.
    private var head = 0

    package init() {}

    package func execute(_ work: @escaping @Sendable () -> Void) {
        lock.withLock { queue.append(work) }
    }

    /// True when no work is queued.
    package var isEmpty: Bool { lock.withLock { head == queue.count } }

    /// Runs the work queued now, not what it queues: one loop turn.
    package func runTurn() {
        let turn = lock.withLock { () -> ArraySlice<@Sendable () -> Void> in
            defer {
                queue = []
                head = 0
            }
            return queue[head...]
        }
        for work in turn { work() }
    }

    /// Runs the first piece of queued work, if any: one turn of a loop
    /// that runs one piece per turn. Returns whether there was one.
    @discardableResult
    package func runNext() -> Bool {
        guard let work = takeFirst() else { return false }
        work()
        return true
    }

    /// Runs queued work, and what that work queues, until none is left.
    package func drain() {
        while let work = takeFirst() { work() }
    }

    private func takeFirst() -> (@Sendable () -> Void)? {
        lock.withLock {
            guard head < queue.count else { return nil }
            let work = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024 && head * 2 >= queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return work
        }
    }
}
