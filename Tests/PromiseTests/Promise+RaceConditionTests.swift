import Foundation
import Promise
import Synchronization
import Testing

/// Suites whose tests meet two or three threads at a spin barrier every round. Serialized
/// together: two such suites at once on two cores starve each other (under ThreadSanitizer,
/// 100,000 rounds of resolve racing cancel passed in 40 s alone and missed 120 s beside the
/// races below).
@Suite("Threads meeting at a barrier", .serialized)
enum BarrierRaceTests {}

extension BarrierRaceTests {
    @Suite("Races in the core (issue 23, item 5)", .serialized, .timeLimit(.minutes(3)))
    struct PromiseRaceConditionTests {
        // MARK: (a) registration order under a concurrent settle

        @Test("a handler registered while fulfill is still handing out earlier handlers runs after them on a serial executor")
        func registrationDuringSettleKeepsOrder() async {
            // Arrange: the executor holds the settling thread inside its first
            // `execute` (the first handler being handed out) until told to go on.
            let executor = GatedOrderExecutor()
            let order = Recorder<Int>()
            let promise = Promise<Int>()
            promise.then(on: executor) { _ in order.append(1) }

            // Act: fulfil on a thread of its own; while it is stuck handing out
            // handler 1, register handler 2 here.
            let settler = Thread { promise.fulfill(0) }
            settler.start()
            #expect(executor.firstExecuteStarted.wait(timeout: .now() + 10) == .success)
            let child2 = promise.then(on: executor) { _ in order.append(2) }
            executor.release()

            // Assert: handler 2 went to the executor after handler 1.
            #expect(await child2.fulfilledValue() != nil)
            #expect(order.values == [1, 2])
            #expect(executor.submitted == ["first", "later"])
        }

        @Test("order under a concurrent settle: handlers registered from another thread while one fulfils run in registration order on a serial queue")
        func concurrentSettleKeepsRegistrationOrder() async {
            // Arrange: per round, a serial queue, a promise with a first handler,
            // and a second thread registering three more around the fulfil.
            let rounds = 3_000
            let barrier = RoundBarrier(parties: 2)
            let promises = (0..<rounds).map { _ in Promise<Int>() }
            let queues = (0..<rounds).map { DispatchQueue(label: "PromiseRaceConditionTests.order.\($0)") }
            let orders = (0..<rounds).map { _ in Recorder<Int>() }
            let lasts = LockedBox<[Promise<Void>?]>(Array(repeating: nil, count: rounds))
            for round in 0..<rounds {
                promises[round].then(on: queues[round]) { _ in orders[round].append(0) }
            }

            // Act.
            let finished = await runOnThreads(2, timeout: .seconds(120)) { thread in
                for round in 0..<rounds {
                    barrier.arrive(round: round)
                    if thread == 0 {
                        promises[round].fulfill(round)
                    } else {
                        var last: Promise<Void>?
                        for handler in 1...3 {
                            last = promises[round].then(on: queues[round]) { _ in orders[round].append(handler) }
                        }
                        lasts.withLock { $0[round] = last }
                    }
                }
            }

            // Assert.
            #expect(finished)
            for round in 0..<rounds {
                _ = await lasts.value[round]?.fulfilledValue(within: .seconds(30))
            }
            let outOfOrder = (0..<rounds).filter { orders[$0].values != [0, 1, 2, 3] }
            #expect(outOfOrder.isEmpty, "\(outOfOrder.count) of \(rounds) rounds ran handlers out of order, e.g. \(outOfOrder.first.map { orders[$0].values } ?? [])")
        }

        @Test("an inline handler registered from inside a handler run of the same promise runs after the handlers before it")
        func reentrantRegistrationRunsAfterEarlierHandlers() {
            // Arrange.
            let order = Recorder<String>()
            let promise = Promise<Int>()
            promise.then(on: .inline) { _ in
                order.append("first")
                promise.then(on: .inline) { _ in order.append("registered by first") }
            }
            promise.then(on: .inline) { _ in order.append("second") }

            // Act.
            promise.fulfill(1)

            // Assert: all ran before fulfill returned, the late one last.
            #expect(order.values == ["first", "second", "registered by first"])
        }

        @Test(".inline handler registered from another thread while the settling thread still runs earlier .inline handlers runs at once, inside then")
        func inlineRegistrationDuringInlineHandoutRunsAtOnce() async {
            // Arrange: the first handler, on the settling thread, waits (5 s
            // at most) for the second to have run.
            let promise = Promise<Int>()
            let firstStarted = DispatchSemaphore(value: 0)
            let secondRan = DispatchSemaphore(value: 0)
            let firstSawSecond = Recorder<Bool>()
            promise.then(on: .inline) { _ in
                firstStarted.signal()
                firstSawSecond.append(secondRan.wait(timeout: .now() + 5) == .success)
            }
            let settler = Thread { promise.fulfill(7) }
            settler.start()
            #expect(firstStarted.wait(timeout: .now() + 10) == .success)

            // Act: register here while the first handler is still running.
            let second = promise.then(on: .inline) { value -> Int in
                secondRan.signal()
                return value + 1
            }

            // Assert: it ran inside `then`, on this thread (CORE-API: `.inline`
            // runs at once when the promise is already settled), not after
            // the first handler returned.
            #expect(second.fulfilledNow == 8)
            #expect(await eventually { firstSawSecond.count == 1 })
            #expect(firstSawSecond.values == [true])
        }

        @Test("a handler registered from another thread after one the settling thread queued from inside an .inline handler runs after it on a serial executor")
        func registrationAfterReentrantOneKeepsOrder() async {
            // Arrange: the settling thread's .inline handler registers handler
            // 1 on the same promise (it queues behind the hand-out), then has
            // another thread register handler 2 and waits until it has.
            let executor = ImmediateExecutor()
            let order = Recorder<Int>()
            let promise = Promise<Int>()
            let secondRegistered = DispatchSemaphore(value: 0)
            let lastChild = LockedBox<Promise<Void>?>(nil)
            promise.then(on: .inline) { _ in
                promise.then(on: executor) { _ in order.append(1) }
                Thread {
                    lastChild.value = promise.then(on: executor) { _ in order.append(2) }
                    secondRegistered.signal()
                }.start()
                _ = secondRegistered.wait(timeout: .now() + 10)
            }

            // Act.
            let settled = await onNewThread { promise.fulfill(0) }

            // Assert: handler 1, registered first, ran first.
            #expect(settled != nil)
            #expect(await eventually { order.count == 2 })
            #expect(order.values == [1, 2])
            #expect(lastChild.value?.fulfilledNow != nil)
        }

        // MARK: (c) adoption cycles closed from two threads

        @Test("a.resolve(b) racing b.resolve(a): one of them finds the cycle and both end rejected with PromiseError.cycle")
        func crossResolveRaceRejectsWithCycle() async {
            // Arrange.
            let rounds = 20_000
            let firsts = (0..<rounds).map { _ in Promise<Int>() }
            let seconds = (0..<rounds).map { _ in Promise<Int>() }
            let barrier = RoundBarrier(parties: 2)

            // Act.
            let finished = await runOnThreads(2, timeout: .seconds(120)) { thread in
                for round in 0..<rounds {
                    barrier.arrive(round: round)
                    if thread == 0 { firsts[round].resolve(seconds[round]) } else { seconds[round].resolve(firsts[round]) }
                }
            }

            // Assert: nothing is left waiting on itself.
            #expect(finished)
            let hanging = (0..<rounds).filter { firsts[$0].isPending || seconds[$0].isPending }
            #expect(hanging.isEmpty, "\(hanging.count) of \(rounds) pairs wait on each other for ever")
            let notCycle = (0..<rounds).filter { round in
                [firsts[round], seconds[round]].contains { promise in
                    guard case .failure(let error)? = promise.result else { return true }
                    return error as? PromiseError != .cycle
                }
            }
            #expect(notCycle.isEmpty, "\(notCycle.count) pairs ended otherwise than rejected with .cycle")
        }

        @Test("a three-promise cycle closed from three threads at once ends rejected with PromiseError.cycle")
        func threeWayResolveRaceRejectsWithCycle() async {
            // Arrange: a ← b ← c ← a, each link made by its own thread.
            let rounds = 5_000
            let promises = (0..<rounds).map { _ in (0..<3).map { _ in Promise<Int>() } }
            let barrier = RoundBarrier(parties: 3)

            // Act.
            let finished = await runOnThreads(3, timeout: .seconds(120)) { thread in
                for round in 0..<rounds {
                    barrier.arrive(round: round)
                    promises[round][thread].resolve(promises[round][(thread + 1) % 3])
                }
            }

            // Assert.
            #expect(finished)
            let hanging = promises.filter { $0.contains(where: \.isPending) }.count
            #expect(hanging == 0, "\(hanging) of \(rounds) triangles wait on themselves for ever")
        }
    }
}

/// An executor that runs work at once on the calling thread, but is not
/// `.inline`: the core hands its handlers out as it does any executor's.
private struct ImmediateExecutor: Executor {
    func execute(_ work: @escaping @Sendable () -> Void) { work() }
}

/// An executor that runs work at once, on the calling thread, recording the
/// order of `execute` calls; its first call blocks until `release()`.
// @unchecked Sendable: `calls` and `log` are only touched with `lock` held;
// the semaphores are thread-safe.
private final class GatedOrderExecutor: Executor, @unchecked Sendable {
    let firstExecuteStarted = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var calls = 0
    private var log: [String] = []

    func execute(_ work: @escaping @Sendable () -> Void) {
        let call = lock.withLock { () -> Int in
            calls += 1
            return calls
        }
        if call == 1 {
            firstExecuteStarted.signal()
            gate.wait()
        }
        lock.withLock { log.append(call == 1 ? "first" : "later") }
        work()
    }

    func release() { gate.signal() }

    var submitted: [String] { lock.withLock { log } }
}
