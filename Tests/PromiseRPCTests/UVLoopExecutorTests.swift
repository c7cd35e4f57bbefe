import Foundation
import Promise
@testable import PromiseRPC
import Testing

@Suite("LoopExecutor")
struct UVLoopExecutorTests {
    @Test("work submitted from another thread runs on the loop thread, in submission order")
    func runsOnLoopThreadInOrder() throws {
        let thread = try LoopThread(name: "test-loop")
        thread.start { _ in }
        defer {
            thread.stop()
            thread.waitUntilFinished(timeout: .seconds(5))
        }
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
        let thread = try LoopThread(name: "test-loop")
        thread.start { _ in }
        defer {
            thread.stop()
            thread.waitUntilFinished(timeout: .seconds(5))
        }
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
        let thread = try LoopThread(name: "test-loop")
        thread.start { _ in }
        defer {
            thread.stop()
            thread.waitUntilFinished(timeout: .seconds(5))
        }
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

    @Test("a core promise handler on the loop executor runs on the loop thread")
    func promiseHandlersOnLoop() throws {
        let thread = try LoopThread(name: "test-loop")
        thread.start { _ in }
        defer {
            thread.stop()
            thread.waitUntilFinished(timeout: .seconds(5))
        }
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
