import Foundation
import Promise
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseServer
import Testing

@Suite("LoopExecutor")
struct UVLoopExecutorTests {
    @Test("work submitted from another thread runs on the loop thread, in submission order")
    func runsOnLoopThreadInOrder() throws {
        let thread = try startedLoopThread()
        defer { stop(thread) }
        let seen = ServerLocked<(order: [Int], offLoop: Int)>(([], 0))
        let executor = thread.executor
        #expect(!executor.isLoopThread)
        let submitter = Thread {
            for index in 0..<10_000 {
                executor.execute {
                    let onLoop = executor.isLoopThread
                    seen.update {
                        $0.order.append(index)
                        if !onLoop { $0.offLoop += 1 }
                    }
                }
            }
        }
        submitter.start()
        #expect(serverWaitUntil { seen.value.order.count == 10_000 })
        #expect(seen.value.order == Array(0..<10_000))
        #expect(seen.value.offLoop == 0)
    }

    @Test("work from two threads at once all runs, each thread's work in its order")
    func twoSubmitters() throws {
        let thread = try startedLoopThread()
        defer { stop(thread) }
        let seen = ServerLocked<[Int]>([])
        let executor = thread.executor
        for base in [0, 100_000] {
            Thread {
                for index in 0..<5_000 {
                    executor.execute { seen.update { $0.append(base + index) } }
                }
            }.start()
        }
        #expect(serverWaitUntil { seen.value.count == 10_000 })
        let all = seen.value
        #expect(all.filter { $0 < 100_000 } == Array(0..<5_000))
        #expect(all.filter { $0 >= 100_000 } == Array(100_000..<105_000))
    }

    @Test("work submitted on the loop thread runs later, never on the submitter's stack")
    func loopThreadSubmissionIsQueued() throws {
        let thread = try startedLoopThread()
        defer { stop(thread) }
        let steps = ServerLocked<[String]>([])
        let executor = thread.executor
        executor.execute {
            steps.update { $0.append("outer start") }
            executor.execute { steps.update { $0.append("inner") } }
            steps.update { $0.append("outer end") }
        }
        #expect(serverWaitUntil { steps.value.count == 3 })
        #expect(steps.value == ["outer start", "outer end", "inner"])
    }

    @Test("work submitted on the loop thread runs in the loop's next iteration, before the loop waits for I/O")
    func loopThreadSubmissionRunsBeforeTheLoopWaits() throws {
        let thread = try startedLoopThread()
        defer { stop(thread) }
        let steps = ServerLocked<[String]>([])
        let executor = thread.executor
        thread.onLoop { loop in
            // Runs just before the loop next waits. Woken by the async handle
            // instead, the inner work would run after that wait, so after this.
            let box = WatcherBox()
            box.watcher = try? UVLoopWatcher(.prepare, loop: loop) {
                steps.update { $0.append("before waiting") }
                box.watcher?.close()
            }
            box.watcher?.start()
            executor.execute { steps.update { $0.append("inner") } }
        }
        #expect(serverWaitUntil { steps.value.count == 2 })
        #expect(steps.value == ["inner", "before waiting"])
    }

    @Test("one loop iteration runs at most maxWorkPerTurn items: a burst of work spreads over iterations, in order")
    func burstSpreadsOverIterations() throws {
        let count = LoopExecutor.maxWorkPerTurn * 3 + 10
        let (order, perIteration) = try runCounted(count) { _ in }
        #expect(order == Array(0..<count) + [-1])
        #expect(perIteration.reduce(0, +) == count + 1)
        #expect(perIteration.max()! <= LoopExecutor.maxWorkPerTurn)
        #expect(perIteration.count >= 4)
    }

    @Test("one loop iteration stops once it has run for maxNanosecondsPerTurn: slow items run a few per iteration")
    func slowItemsSpreadOverIterations() throws {
        // Each item takes 2 ms of wall time: a 5 ms turn ends after its third.
        let count = 20
        let (order, perIteration) = try runCounted(count) { _ in
            let start = ContinuousClock.now
            while ContinuousClock.now - start < .milliseconds(2) {}
        }
        #expect(order == Array(0..<count) + [-1])
        #expect(perIteration.reduce(0, +) == count + 1)
        #expect(perIteration.max()! <= 3, "items per iteration: \(perIteration)")
    }

    /// Submits `count` items from the loop thread at once, each running
    /// `body`, and returns the order they ran in (item 0 queues one more
    /// item, -1) and how many ran in each loop iteration that ran any.
    private func runCounted(
        _ count: Int, _ body: @escaping @Sendable (Int) -> Void
    ) throws -> (order: [Int], perIteration: [Int]) {
        let thread = try startedLoopThread()
        defer { stop(thread) }
        let executor = thread.executor
        let seen = ServerLocked<(order: [Int], perIteration: [Int: Int], iteration: Int)>(([], [:], 0))
        thread.onLoop { loop in
            // Counts the loop's iterations: prepare watchers run once in each, before polling for I/O.
            let box = WatcherBox()
            box.watcher = try? UVLoopWatcher(.prepare, loop: loop) {
                withExtendedLifetime(box) { seen.update { $0.iteration += 1 } }
            }
            box.watcher?.start()
            for index in 0..<count {
                executor.execute {
                    body(index)
                    seen.update {
                        $0.order.append(index)
                        $0.perIteration[$0.iteration, default: 0] += 1
                    }
                    // Queued while the burst's rest waits for later turns: it runs once the burst is done.
                    if index == 0 {
                        executor.execute {
                            seen.update {
                                $0.order.append(-1)
                                $0.perIteration[$0.iteration, default: 0] += 1
                            }
                        }
                    }
                }
            }
        }
        #expect(serverWaitUntil { seen.value.order.count == count + 1 })
        let value = seen.value
        return (value.order, value.perIteration.sorted { $0.key < $1.key }.map(\.value))
    }

    @Test("once its queue is empty the loop sleeps: it does not spin on the idle watcher")
    func loopSleepsWhenDrained() throws {
        let thread = try startedLoopThread()
        defer { stop(thread) }
        let executor = thread.executor
        func loopCPUTime() throws -> Duration {
            let promise = Promise<Duration>()
            executor.execute {
                var time = timespec()
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
                promise.fulfill(.seconds(time.tv_sec) + .nanoseconds(time.tv_nsec))
            }
            return try promise.wait(timeout: .seconds(5))
        }
        // Loop-thread submissions start the idle watcher; the drain must stop it.
        executor.execute { for _ in 0..<3 { executor.execute {} } }
        let before = try loopCPUTime()
        usleep(300_000)
        let used = try loopCPUTime() - before
        #expect(used < .milliseconds(100), "the loop thread used \(used) of CPU in 300 ms with nothing to do")
    }

    @Test("a core promise handler on the loop executor runs on the loop thread")
    func promiseHandlersOnLoop() throws {
        let thread = try startedLoopThread()
        defer { stop(thread) }
        let executor = thread.executor
        let promise = Promise<Int>()
        let doubled = promise.then(on: executor) { value -> (Int, Bool) in (value * 2, executor.isLoopThread) }
        promise.fulfill(21)
        let (value, onLoop) = try doubled.wait(timeout: .seconds(5))
        #expect(value == 42)
        #expect(onLoop)
    }

    @Test("work submitted after the loop stopped is dropped without running")
    func afterStopDropped() throws {
        let thread = try LoopThread(name: "test-loop")
        thread.start { _ in }
        thread.stop()
        #expect(thread.waitUntilFinished(timeout: .seconds(5)))
        let ran = ServerLocked(false)
        thread.executor.execute { ran.update { $0 = true } }
        usleep(20_000)
        #expect(!ran.value)
    }

    @Test("work queued before the loop starts runs once it starts")
    func queuedBeforeStart() throws {
        let thread = try LoopThread(name: "test-loop")
        let ran = ServerLocked(false)
        thread.executor.execute { ran.update { $0 = true } }
        thread.start { _ in }
        defer {
            thread.stop()
            thread.waitUntilFinished(timeout: .seconds(5))
        }
        #expect(serverWaitUntil { ran.value })
    }
}

/// Lets a watcher's body close the watcher.
private final class WatcherBox: @unchecked Sendable {  // used on the loop thread only
    var watcher: UVLoopWatcher?
}

/// A loop thread, running.
private func startedLoopThread() throws -> LoopThread {
    let thread = try LoopThread(name: "test-loop")
    thread.start { _ in }
    return thread
}

private func stop(_ thread: LoopThread) {
    thread.stop()
    thread.waitUntilFinished(timeout: .seconds(5))
}
