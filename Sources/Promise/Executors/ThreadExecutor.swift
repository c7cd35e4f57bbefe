import Foundation

/// A dedicated thread with its own run loop: every handler runs on that one
/// thread, one at a time, in the order it was submitted.
///
/// For code that must stay on one thread (a non-thread-safe C library, a
/// database handle). Call ``stop()`` when done, or let the executor go:
/// queued work still runs, then the thread ends.
///
/// ```swift
/// let db = ThreadExecutor(name: "sqlite")
/// promise.then(on: db) { rows in insert(rows) }
/// db.stop()
/// ```
public final class ThreadExecutor: Executor {
    private let mailbox = Mailbox()

    /// Starts the thread.
    public init(name: String = "ThreadExecutor") {
        // The thread holds only the mailbox, so dropping the executor stops it.
        let worker = Thread { [mailbox] in
            mailbox.run()
        }
        worker.name = name
        worker.start()
    }

    deinit {
        mailbox.stop()
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        mailbox.post(work)
    }

    /// Lets queued work finish, then ends the thread. Work submitted after
    /// `stop()` is dropped.
    public func stop() {
        mailbox.stop()
    }

    /// True when called on this executor's thread.
    public var isCurrent: Bool {
        mailbox.isCurrentThread
    }
}

extension ThreadExecutor {
    /// The work queue shared by the executor and its thread.
    private final class Mailbox: @unchecked Sendable {  // `condition` guards every stored property.
        private let condition = NSCondition()
        private var queue: [@Sendable () -> Void] = []
        private var stopping = false
        private var thread: Thread?

        func post(_ work: @escaping @Sendable () -> Void) {
            condition.lock()
            if !stopping {
                queue.append(work)
                condition.signal()
            }
            condition.unlock()
        }

        func stop() {
            condition.lock()
            stopping = true
            condition.signal()
            condition.unlock()
        }

        var isCurrentThread: Bool {
            condition.lock()
            defer { condition.unlock() }
            return thread === Thread.current
        }

        func run() {
            condition.lock()
            thread = Thread.current
            condition.unlock()
            while let batch = nextBatch() {
                for work in batch { work() }
            }
        }

        /// Waits for work; nil once stopped and drained.
        private func nextBatch() -> [@Sendable () -> Void]? {
            condition.lock()
            defer { condition.unlock() }
            while queue.isEmpty && !stopping {
                condition.wait()
            }
            if queue.isEmpty { return nil }
            let batch = queue
            queue.removeAll(keepingCapacity: true)
            return batch
        }
    }
}
