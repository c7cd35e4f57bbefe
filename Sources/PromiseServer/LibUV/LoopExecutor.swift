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
/// One loop iteration runs at most ``maxWorkPerTurn`` items, and stops
/// early once it has run for ``maxNanosecondsPerTurn``; the rest run in the
/// next ones, with the loop polling for I/O in between (without sleeping:
/// the idle watcher stays on). A promise with 100,000 `then` children
/// settles them over some twenty-five turns instead of one, and a queue of
/// slices that each fill a drain budget (a batch's answers, a long
/// settlement) runs one or two per turn, so that other clients' requests
/// and the store's commits are served meanwhile.
///
/// Work submitted after the loop has shut down is dropped.
public final class LoopExecutor: Executor, @unchecked Sendable {  // `lock` guards `queue`, `wakeUp`, `isShutDown`, `loopThread`; `spare`, `next` and `drainSoon` are touched by the loop thread only.
    private let lock = NSLock()
    // `@exclusivity(unchecked)`: the runtime's check sees one thread's
    // accesses only, which `lock` and the loop thread already order; it
    // only cost time on every submission and drain.
    @exclusivity(unchecked) private var queue: [@Sendable () -> Void] = []
    private var wakeUp: UnsafeMutablePointer<uv_async_t>?
    private var drainSoon: UVLoopWatcher?
    private var isShutDown = false
    /// The items taken from `queue` at a wake-up, run from `next` on.
    @exclusivity(unchecked) private var spare: [@Sendable () -> Void] = []
    private var next = 0
    private var loopThread: pthread_t?

    /// Items one loop iteration runs. Each is a core handler or a deferred
    /// step of the registry (a few microseconds): about 10 ms of work, and
    /// far more than a turn of the busiest benchmark queues.
    static let maxWorkPerTurn = 4_096

    /// Time one loop iteration spends on queued items before it polls for
    /// I/O: the loop's drain budget. Single items are bounded by budgets of
    /// their own; this bounds a queue of them.
    static let maxNanosecondsPerTurn: UInt64 = 5_000_000

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

    /// Runs the queued items, up to ``maxWorkPerTurn`` of them and for up to
    /// ``maxNanosecondsPerTurn``. Called by the loop on each wake-up. Items
    /// queued while they run wait for the next call, and so do those past
    /// the bounds (which keeps the watcher on).
    func drain() {
        lock.lock()
        let continuing = next < spare.count
        if !continuing { swap(&queue, &spare) }
        // Work the items submit starts the watcher again.
        drainSoon?.stop()
        lock.unlock()
        let end = min(spare.count, next + Self.maxWorkPerTurn)
        // A turn of one item, the common case under light load, reads no clock.
        if end - next > 1 {
            let deadline = Self.monotonicNanoseconds() + Self.maxNanosecondsPerTurn
            while next < end {
                let work = spare[next]
                next += 1
                work()
                if Self.monotonicNanoseconds() >= deadline { break }
            }
        } else if next < end {
            let work = spare[next]
            next += 1
            work()
        }
        if next < spare.count {
            drainSoon?.start()
            return
        }
        Self.empty(&spare)
        next = 0
        guard continuing else { return }
        // Items queued while an earlier turn's rest ran: their submission
        // started the watcher, which this call stopped.
        lock.lock()
        if !queue.isEmpty { drainSoon?.start() }
        lock.unlock()
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Empties `items`, keeping its capacity. A turn runs a few items as a
    /// rule: `removeAll(keepingCapacity:)` goes through the generic
    /// `replaceSubrange`, whose fixed cost is many times that of popping a
    /// few one by one (docs/PERFORMANCE.md).
    private static func empty(_ items: inout [@Sendable () -> Void]) {
        guard items.count <= 64 else { return items.removeAll(keepingCapacity: true) }
        while items.popLast() != nil {}
    }

    /// Runs what is queued, then stops accepting work, before the wake-up
    /// handle is closed. Loop thread only.
    func shutDown() {
        repeat { drain() } while next < spare.count
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
