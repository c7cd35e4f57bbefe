import Dispatch
import Foundation
import Promise
import Testing

@Suite("Executors", .timeLimit(.minutes(5)))
struct ExecutorTests {
    // MARK: .inline

    @Test(".inline runs a handler inside fulfill, on the settling thread, before fulfill returns")
    func inlineRunsInsideFulfill() async {
        let promise = Promise<Int>()
        let seen = Recorder<(value: Int, thread: UInt64, insideCaller: Bool)>()
        promise.then(on: .inline) { value in
            seen.append((value, currentThreadID(), CallerStack.isInside))
        }
        let settler = LockedBox<UInt64>(0)
        let finished = await runOnThreads(1) { _ in
            settler.value = currentThreadID()
            CallerStack.run { _ = promise.fulfill(9) }
            // Already ran, on this thread, inside the call.
        }
        #expect(finished)
        let entries = seen.values
        #expect(entries.count == 1)
        #expect(entries.first?.value == 9)
        #expect(entries.first?.thread == settler.value)
        #expect(entries.first?.insideCaller == true)
    }

    @Test(".inline runs a handler inside reject too")
    func inlineRunsInsideReject() {
        let promise = Promise<Int>()
        let seen = Recorder<Bool>()
        promise.recover(on: .inline) { _ -> Int in
            seen.append(CallerStack.isInside)
            return 0
        }
        CallerStack.run { _ = promise.reject(TestError.boom) }
        #expect(seen.values == [true])
    }

    @Test(".inline runs a handler inside then, on the registering thread, when the promise is already settled")
    func inlineRunsInsideThen() {
        let promise = Promise(value: 2)
        let seen = Recorder<Bool>()
        let child = CallerStack.run {
            promise.then(on: .inline) { value -> Int in
                seen.append(CallerStack.isInside)
                return value * 2
            }
        }
        #expect(seen.values == [true])
        #expect(child.fulfilledNow == 4)
    }

    @Test(".inline handlers run in registration order")
    func inlineOrder() {
        let promise = Promise<Int>()
        let order = Recorder<Int>()
        for index in 0..<20 {
            promise.then(on: .inline) { _ in order.append(index) }
        }
        promise.fulfill(0)
        #expect(order.values == Array(0..<20))
    }

    // MARK: .default

    @Test(".default never runs a handler on the caller's stack, neither inside then nor inside fulfill")
    func defaultIsNeverSynchronous() async {
        let seen = Recorder<Bool>()
        let settled = Promise(value: 1)
        CallerStack.run {
            for _ in 0..<20 { settled.then { _ in seen.append(CallerStack.isInside) } }
        }
        let pending = Promise<Int>()
        for _ in 0..<20 { pending.then { _ in seen.append(CallerStack.isInside) } }
        CallerStack.run { _ = pending.fulfill(1) }
        #expect(await eventually { seen.count == 40 })
        #expect(seen.values.allSatisfy { $0 == false })
    }

    @Test(".default runs handlers concurrently with the registering thread")
    func defaultRunsWhileCallerBlocks() async {
        // The handler must run even while the thread that registered it is still busy.
        let ran = LockedBox(false)
        let finished = await runOnThreads(1) { _ in
            Promise(value: 1).then { _ in ran.value = true }
            let deadline = Date().addingTimeInterval(5)
            while !ran.value && Date() < deadline { usleep(1_000) }
        }
        #expect(finished)
        #expect(ran.value)
    }

    // MARK: .main

    /// Tags DispatchQueue.main so a handler can tell that it runs on the main queue.
    private static let mainQueueKey: DispatchSpecificKey<String> = {
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        return key
    }()

    @Test(".main runs the handler on DispatchQueue.main")
    func mainRunsOnMainQueue() async {
        // On Linux the main queue runs only while something drains it. Swift Testing's async
        // entry point does (dispatchMain), though not necessarily on the thread Foundation calls
        // the main thread, so this checks the queue, not Thread.isMainThread.
        let key = Self.mainQueueKey
        let seen = Recorder<String?>()
        Promise(value: 1).then(on: .main) { _ in seen.append(DispatchQueue.getSpecific(key: key)) }
        let pending = Promise<Int>()
        pending.then(on: .main) { _ in seen.append(DispatchQueue.getSpecific(key: key)) }
        pending.fulfill(1)
        #expect(await eventually { seen.count == 2 })
        #expect(seen.values == ["main", "main"])
    }

    @Test(".main handlers run in registration order")
    func mainOrder() async {
        #expect(await registrationOrder(on: .main) == Array(0..<50))
    }

    @Test(".main is never synchronous, even when called from the main thread")
    func mainIsNeverSynchronous() async {
        let seen = Recorder<Bool>()
        _ = await MainActor.run {
            CallerStack.run {
                Promise(value: 1).then(on: .main) { _ in seen.append(CallerStack.isInside) }
            }
        }
        #expect(await eventually { seen.count == 1 })
        #expect(seen.values == [false])
    }

    // MARK: DispatchQueue

    @Test("a serial DispatchQueue runs handlers in registration order, registered before or after settling")
    func serialQueueOrder() async {
        let queue = DispatchQueue(label: "PromiseTests.serial")
        let order = Recorder<Int>()
        let promise = Promise<Int>()
        for index in 0..<100 {
            promise.then(on: queue) { _ in order.append(index) }
        }
        promise.fulfill(0)
        for index in 100..<200 {
            promise.then(on: queue) { _ in order.append(index) }
        }
        #expect(await eventually { order.count == 200 })
        #expect(order.values == Array(0..<200))
    }

    @Test("a DispatchQueue handler is never run on the caller's stack")
    func queueIsNeverSynchronous() async {
        let queue = DispatchQueue(label: "PromiseTests.async")
        let seen = Recorder<Bool>()
        CallerStack.run {
            Promise(value: 1).then(on: queue) { _ in seen.append(CallerStack.isInside) }
        }
        let pending = Promise<Int>()
        pending.then(on: queue) { _ in seen.append(CallerStack.isInside) }
        CallerStack.run { _ = pending.fulfill(1) }
        #expect(await eventually { seen.count == 2 })
        #expect(seen.values == [false, false])
    }

    @Test("a DispatchQueue handler runs on that queue")
    func queueRunsOnQueue() async {
        let queue = DispatchQueue(label: "PromiseTests.owned")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 42)
        let seen = Recorder<Int?>()
        Promise(value: 1).then(on: queue) { _ in seen.append(DispatchQueue.getSpecific(key: key)) }
        #expect(await eventually { seen.count == 1 })
        #expect(seen.values == [42])
    }

    @Test("on a concurrent DispatchQueue a handler runs as a barrier: it never overlaps other work on the queue")
    func concurrentQueueUsesBarrier() async {
        // One block at a time before and after the handler: dispatch's pool on a small machine
        // may have no spare thread for a second block, and then a missing barrier would go
        // unseen. With a single block there is a free thread to overlap on unless the handler
        // waits for the block, as a barrier does.
        let queue = DispatchQueue(label: "PromiseTests.concurrent", attributes: .concurrent)
        let blockRunning = LockedBox(false)
        let handlerRunning = LockedBox(false)
        let overlaps = Recorder<String>()
        let done = Counter()
        queue.async {
            blockRunning.value = true
            usleep(60_000)
            blockRunning.value = false
            done.add()
        }
        Promise(value: 1).then(on: queue) { _ in
            if blockRunning.value { overlaps.append("handler started while the block before it ran") }
            handlerRunning.value = true
            usleep(30_000)
            handlerRunning.value = false
            done.add()
        }
        queue.async {
            if handlerRunning.value { overlaps.append("block after the handler started while it ran") }
            done.add()
        }
        #expect(await eventually { done.value == 3 })
        #expect(overlaps.values == [])
    }

    @Test("a concurrent DispatchQueue still runs handlers registered on it in registration order")
    func concurrentQueueOrder() async {
        let queue = DispatchQueue(label: "PromiseTests.concurrentOrder", attributes: .concurrent)
        #expect(await registrationOrder(on: queue) == Array(0..<50))
    }

    // MARK: OperationQueue

    @Test("an OperationQueue runs the handler, not on the caller's stack")
    func operationQueueRuns() async {
        let queue = OperationQueue()
        let seen = Recorder<Bool>()
        CallerStack.run {
            Promise(value: 1).then(on: queue) { _ in seen.append(CallerStack.isInside) }
        }
        #expect(await eventually { seen.count == 1 })
        #expect(seen.values == [false])
    }

    @Test("a serial OperationQueue runs handlers in registration order")
    func serialOperationQueueOrder() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let order = Recorder<Int>()
        let promise = Promise<Int>()
        for index in 0..<50 {
            promise.then(on: queue) { _ in order.append(index) }
        }
        promise.fulfill(0)
        #expect(await eventually { order.count == 50 })
        #expect(order.values == Array(0..<50))
    }

    // MARK: ThreadExecutor

    @Test("a ThreadExecutor runs every handler on one thread of its own, in order")
    func threadExecutorOneThreadInOrder() async {
        let executor = ThreadExecutor(name: "PromiseTests.thread")
        defer { executor.stop() }
        let seen = Recorder<(index: Int, thread: UInt64, insideCaller: Bool)>()
        let promise = Promise<Int>()
        for index in 0..<100 {
            promise.then(on: executor) { _ in seen.append((index, currentThreadID(), CallerStack.isInside)) }
        }
        CallerStack.run { _ = promise.fulfill(0) }
        for index in 100..<200 {
            Promise(value: 0).then(on: executor) { _ in seen.append((index, currentThreadID(), CallerStack.isInside)) }
        }
        #expect(await eventually { seen.count == 200 })
        let entries = seen.values
        #expect(entries.map(\.index) == Array(0..<200))
        #expect(Set(entries.map(\.thread)).count == 1)
        #expect(entries.first?.thread != currentThreadID())
        #expect(entries.allSatisfy { !$0.insideCaller })
    }

    @Test("a ThreadExecutor runs work enqueued directly, in order")
    func threadExecutorExecute() async {
        let executor = ThreadExecutor(name: "PromiseTests.direct")
        defer { executor.stop() }
        let order = Recorder<Int>()
        for index in 0..<50 { executor.execute { order.append(index) } }
        #expect(await eventually { order.count == 50 })
        #expect(order.values == Array(0..<50))
    }

    @Test("two ThreadExecutors use two different threads")
    func threadExecutorsAreDistinct() async {
        let first = ThreadExecutor(name: "PromiseTests.first")
        let second = ThreadExecutor(name: "PromiseTests.second")
        defer {
            first.stop()
            second.stop()
        }
        let firstThread = LockedBox<UInt64?>(nil)
        let secondThread = LockedBox<UInt64?>(nil)
        first.execute { firstThread.value = currentThreadID() }
        second.execute { secondThread.value = currentThreadID() }
        #expect(await eventually { firstThread.value != nil && secondThread.value != nil })
        #expect(firstThread.value != secondThread.value)
    }

    @Test("ThreadExecutor.stop lets queued work finish and drops work submitted afterwards")
    func threadExecutorStop() async {
        let executor = ThreadExecutor(name: "PromiseTests.stop")
        let gate = DispatchSemaphore(value: 0)
        let order = Recorder<Int>()
        executor.execute { gate.wait() }
        for index in 0..<10 { executor.execute { order.append(index) } }
        executor.stop()
        executor.execute { order.append(99) }
        gate.signal()
        #expect(await eventually { order.count == 10 })
        #expect(await holds(for: .milliseconds(100)) { order.values == Array(0..<10) })
    }

    @Test("ThreadExecutor.isCurrent is true on its thread only")
    func threadExecutorIsCurrent() async {
        let executor = ThreadExecutor(name: "PromiseTests.isCurrent")
        let other = ThreadExecutor(name: "PromiseTests.isCurrent.other")
        defer {
            executor.stop()
            other.stop()
        }
        let seen = LockedBox<(own: Bool, other: Bool)?>(nil)
        executor.execute { seen.value = (executor.isCurrent, other.isCurrent) }
        #expect(await eventually { seen.value != nil })
        #expect(seen.value?.own == true)
        #expect(seen.value?.other == false)
        #expect(!executor.isCurrent)
    }

    // MARK: Priority executors

    @Test("the priority executors run handlers, never on the caller's stack", arguments: ["high", "low", "lowest"])
    func priorityExecutorsRun(level: String) async {
        let seen = Recorder<Bool>()
        let promise = Promise<Int>()
        CallerStack.run {
            switch level {
            case "high": promise.then(on: .highPriority) { _ in seen.append(CallerStack.isInside) }
            case "low": promise.then(on: .lowPriority) { _ in seen.append(CallerStack.isInside) }
            default: promise.then(on: .lowestPriority) { _ in seen.append(CallerStack.isInside) }
            }
            promise.fulfill(1)
        }
        #expect(await eventually { seen.count == 1 })
        #expect(seen.values == [false])
    }
}
