internal import CLibUV
import Foundation
public import Promise

/// Runs work on the daemon's libuv loop thread, in submission order.
///
/// Any thread may submit. Work goes into a queue; the first submission into
/// an empty queue wakes the loop (`uv_async_send`), and the loop runs the
/// whole queue on its next wake-up. Work submitted from the loop thread
/// itself is queued too, never run on the caller's stack, so a handler that
/// settles a promise cannot re-enter the code that settled it; it runs in
/// the loop's next iteration, before the loop can sleep. That needs no
/// wake-up: an idle watcher keeps the loop from waiting while the queue is
/// not empty. (`uv_async_send` would cost a `write` to an eventfd, then an
/// extra `epoll_wait` and a `read` of it: on a daemon settling promises on
/// its loop thread, three system calls per request.)
///
/// ```swift
/// promise.then(on: server.executor) { value in
///     peer.send(answer(value))  // on the loop thread, where peers live
/// }
/// ```
///
/// Work submitted after the loop has shut down is dropped.
public final class LoopExecutor: Executor, @unchecked Sendable {  // `lock` guards `queue`, `wakeUp`, `isShutDown`, `loopThread`; `spare` and `drainSoon` are touched by the loop thread only.
    private let lock = NSLock()
    // `@exclusivity(unchecked)`: the runtime's check sees one thread's
    // accesses only, which `lock` and the loop thread already order; it
    // only cost time on every submission and drain.
    @exclusivity(unchecked) private var queue: [@Sendable () -> Void] = []
    private var wakeUp: UnsafeMutablePointer<uv_async_t>?
    private var drainSoon: UVLoopWatcher?
    private var isShutDown = false
    @exclusivity(unchecked) private var spare: [@Sendable () -> Void] = []
    private var loopThread: pthread_t?

    init() {
        queue.reserveCapacity(64)
        spare.reserveCapacity(64)
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        lock.lock()
        defer { lock.unlock() }
        guard !isShutDown else { return }
        queue.append(work)
        // One wake-up per batch. Sent under the lock so that `shutDown()`
        // cannot free the handle between the check and the send.
        guard queue.count == 1 else { return }
        if Self.isCurrent(loopThread) {
            drainSoon?.start()
        } else if let wakeUp {
            uv_async_send(wakeUp)
        }
    }

    /// True when called on the loop thread.
    public var isLoopThread: Bool {
        lock.lock()
        let loopThread = self.loopThread
        lock.unlock()
        return Self.isCurrent(loopThread)
    }

    private static func isCurrent(_ thread: pthread_t?) -> Bool {
        guard let thread else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// Connects the executor to its loop's wake-up handle, and to the idle
    /// watcher that drains it, stopped, for work submitted on the loop thread.
    /// Called once, on the loop thread, before the loop runs.
    func attach(_ async: UVAsync, drainSoon: UVLoopWatcher) {
        lock.lock()
        loopThread = pthread_self()
        wakeUp = async.asyncPointer
        self.drainSoon = drainSoon
        if !queue.isEmpty {
            uv_async_send(async.asyncPointer)
        }
        lock.unlock()
    }

    /// Runs every queued item. Called by the loop on each wake-up.
    func drain() {
        lock.lock()
        swap(&queue, &spare)
        // Work the items submit starts the watcher again.
        drainSoon?.stop()
        lock.unlock()
        for work in spare {
            work()
        }
        spare.removeAll(keepingCapacity: true)
    }

    /// Runs what is queued, then stops accepting work, before the wake-up
    /// handle is closed. Loop thread only.
    func shutDown() {
        drain()
        lock.lock()
        isShutDown = true
        wakeUp = nil
        drainSoon = nil
        let leftover = queue
        queue = []
        lock.unlock()
        for work in leftover {
            work()
        }
    }
}
