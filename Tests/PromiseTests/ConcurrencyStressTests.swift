import Dispatch
import Foundation
import Promise
import Synchronization
import Testing

/// Many threads at once, deep chains and wide trees: the core must stay exact and must not
/// recurse once per link. Serialized: each test already loads both cores, and under
/// ThreadSanitizer several 100,000-promise tests at once slow each other down far more than
/// linearly.
@Suite("Concurrency stress", .serialized, .timeLimit(.minutes(3)))
struct ConcurrencyStressTests {
    @Test("threads racing to fulfil, reject and cancel one promise: exactly one wins and its outcome sticks")
    func racingSettlers() async {
        let rounds = 200
        let threads = 4
        let problems = Recorder<String>()
        for round in 0..<rounds {
            let promise = Promise<Int>()
            let winners = Recorder<Int>()
            let finished = await runOnThreads(threads) { thread in
                let won: Bool
                switch thread % 4 {
                case 0: won = promise.fulfill(thread)
                case 1: won = promise.reject(TestError.other(thread))
                case 2: won = promise.cancel()
                default: won = promise.fulfill(thread)
                }
                if won { winners.append(thread) }
            }
            guard finished else {
                problems.append("round \(round): threads did not finish")
                continue
            }
            guard winners.count == 1, let winner = winners.values.first else {
                problems.append("round \(round): \(winners.count) winners")
                continue
            }
            let consistent: Bool
            switch winner % 4 {
            case 0, 3: consistent = promise.fulfilledNow == winner
            case 1: consistent = promise.errorNow as? TestError == .other(winner)
            default: consistent = promise.isCancelled
            }
            if !consistent { problems.append("round \(round): winner \(winner) but state \(String(describing: promise.result))") }
        }
        #expect(problems.values.isEmpty, "\(problems.values.prefix(5))")
    }

    @Test("handlers registered from many threads while another thread fulfils each run exactly once", arguments: [true, false])
    func registeringWhileFulfilling(inline: Bool) async {
        let registrants = 4
        let perThread = 500
        let promise = Promise<Int>()
        let calls = Counter()
        let sum = Counter()
        let finished = await runOnThreads(registrants + 1) { thread in
            if thread == registrants {
                usleep(200)
                promise.fulfill(2)
                return
            }
            for _ in 0..<perThread {
                if inline {
                    promise.then(on: .inline) { value in calls.add(); sum.add(value) }
                } else {
                    promise.then { value in calls.add(); sum.add(value) }
                }
            }
        }
        #expect(finished)
        #expect(await eventually { calls.value == registrants * perThread })
        #expect(await holds { calls.value == registrants * perThread })
        #expect(sum.value == 2 * registrants * perThread)
    }

    @Test("onCancel handlers registered from many threads while another cancels each run exactly once")
    func registeringWhileCancelling() async {
        let registrants = 4
        let perThread = 300
        let promise = Promise<Int>()
        let calls = Counter()
        let finished = await runOnThreads(registrants + 1) { thread in
            if thread == registrants {
                usleep(200)
                promise.cancel()
                return
            }
            for _ in 0..<perThread {
                promise.onCancel(on: .inline) { calls.add() }
            }
        }
        #expect(finished)
        #expect(await eventually { calls.value == registrants * perThread })
        #expect(await holds { calls.value == registrants * perThread })
    }

    @Test("children cancelled from many threads at once cancel their parent exactly once")
    func concurrentChildCancellation() async {
        for _ in 0..<20 {
            let parent = Promise<Int>()
            let parentCancels = Counter()
            parent.onCancel(on: .inline) { parentCancels.add() }
            let children = (0..<8).map { _ in parent.then { $0 } }
            let finished = await runOnThreads(4) { thread in
                for index in stride(from: thread, to: children.count, by: 4) {
                    children[index].cancel()
                }
            }
            #expect(finished)
            let cancelledOnce = await eventually { parentCancels.value == 1 }
            #expect(cancelledOnce)
            #expect(parent.isCancelled)
            if !cancelledOnce { break }
        }
    }

    @Test("fulfil racing cancel of the only child: the parent ends either fulfilled or cancelled, consistently")
    func fulfilRacingChildCancel() async {
        let problems = Recorder<String>()
        for round in 0..<100 {
            let parent = Promise<Int>()
            let child = parent.then(on: .inline) { $0 + 1 }
            let handlerRuns = Counter()
            parent.then(on: .inline) { _ in handlerRuns.add() }.cancel()
            let finished = await runOnThreads(2) { thread in
                if thread == 0 { parent.fulfill(1) } else { child.cancel() }
            }
            guard finished, await eventually({ !parent.isPending && !child.isPending }) else {
                problems.append("round \(round): did not settle")
                continue
            }
            if parent.isFulfilled {
                // The child either got the value or was cancelled first; never anything else.
                if !(child.fulfilledNow == 2 || child.isCancelled) { problems.append("round \(round): child \(String(describing: child.result))") }
            } else if !parent.isCancelled || !child.isCancelled {
                problems.append("round \(round): parent \(String(describing: parent.result)) child \(String(describing: child.result))")
            }
        }
        #expect(problems.values.isEmpty, "\(problems.values.prefix(5))")
    }

    /// Runs `body` on a thread with a 1 MiB stack, off the cooperative pool: building a long chain
    /// takes a while and must not starve other tests, and an `.inline` settle that recursed once
    /// per link would overflow this stack at once instead of passing on a generous one.
    private func onSmallStack<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T? {
        switch await onNewThread(timeout: .seconds(60), stackSize: 1 << 20, body) {
        case .success(let value)?: return value
        case .failure(let error)?: Issue.record("unexpected error \(error)"); return nil
        case nil: Issue.record("did not finish within 60 s"); return nil
        }
    }

    @Test("a chain of 100,000 then links settles without overflowing the stack", arguments: [true, false])
    func deepThenChain(inline: Bool) async {
        let links = 100_000
        let end = await onSmallStack { () -> Promise<Int> in
            let root = Promise<Int>()
            var end = root
            for _ in 0..<links {
                end = inline ? end.then(on: .inline) { $0 + 1 } : end.then { $0 + 1 }
            }
            root.fulfill(0)
            return end
        }
        #expect(await end?.fulfilledValue(within: .seconds(60)) == links)
    }

    @Test("a chain of 100,000 then links built on an already fulfilled root settles", arguments: [true, false])
    func deepChainOnFulfilledRoot(inline: Bool) async {
        let links = 100_000
        let end = await onSmallStack { () -> Promise<Int> in
            var end = Promise(value: 0)
            for _ in 0..<links {
                end = inline ? end.then(on: .inline) { $0 + 1 } : end.then { $0 + 1 }
            }
            return end
        }
        #expect(await end?.fulfilledValue(within: .seconds(60)) == links)
    }

    @Test("a chain of 100,000 rejected links passes the error to the end without overflowing the stack")
    func deepRejectedChain() async {
        let end = await onSmallStack { () -> Promise<Int> in
            let root = Promise<Int>()
            var end = root
            for _ in 0..<100_000 { end = end.then(on: .inline) { $0 + 1 } }
            root.reject(TestError.boom)
            return end
        }
        #expect(await end?.rejectionError(within: .seconds(60)) as? TestError == .boom)
    }

    @Test("a chain of 100,000 adoptions (resolve) settles without overflowing the stack")
    func deepAdoptionChain() async {
        let first = await onSmallStack { () -> Promise<Int> in
            let links = (0..<100_000).map { _ in Promise<Int>() }
            for index in 0..<(links.count - 1) {
                links[index].resolve(links[index + 1])
            }
            links[links.count - 1].fulfill(3)
            return links[0]
        }
        #expect(await first?.fulfilledValue(within: .seconds(60)) == 3)
    }

    @Test("an adoption chain of 10,000 links built from its far end settles in bounded time")
    func reverseAdoptionChain() async {
        // Each resolve here adopts a promise that already waits on all the links after it: a
        // cycle check that walks the whole chain on every resolve makes this quadratic.
        let clock = ContinuousClock()
        let start = clock.now
        let first = await onSmallStack { () -> Promise<Int> in
            let links = (0..<10_000).map { _ in Promise<Int>() }
            for index in stride(from: links.count - 2, through: 0, by: -1) {
                links[index].resolve(links[index + 1])
            }
            links[links.count - 1].fulfill(5)
            return links[0]
        }
        #expect(await first?.fulfilledValue(within: .seconds(60)) == 5)
        // Linear work takes well under a second even under ThreadSanitizer; quadratic work
        // (50 million steps) takes several seconds in a debug build.
        #expect(clock.now - start < .seconds(3))
    }

    @Test("a chain of 100,000 handlers each returning a promise settles without overflowing the stack")
    func deepPromiseReturningChain() async {
        let links = 100_000
        let end = await onSmallStack { () -> Promise<Int> in
            let root = Promise<Int>()
            var end = root
            for _ in 0..<links {
                end = end.then(on: .inline) { Promise(value: $0 + 1) }
            }
            root.fulfill(0)
            return end
        }
        #expect(await end?.fulfilledValue(within: .seconds(60)) == links)
    }

    @Test("cancelling the root of a 10,000-node tree cancels every node and runs no handler")
    func cancelWideTree() async {
        // Fan-out 10, four levels below the root: 1 + 10 + 100 + 1,000 + 10,000 nodes.
        let handlerRuns = Counter()
        let built = await onSmallStack { () -> (root: Promise<Int>, nodes: [Promise<Int>]) in
            let root = Promise<Int>()
            var level: [Promise<Int>] = [root]
            var nodes: [Promise<Int>] = []
            for _ in 0..<4 {
                var next: [Promise<Int>] = []
                next.reserveCapacity(level.count * 10)
                for node in level {
                    for _ in 0..<10 {
                        next.append(node.then(on: .inline) { value -> Int in handlerRuns.add(); return value })
                    }
                }
                nodes += next
                level = next
            }
            return (root, nodes)
        }
        guard let (root, nodes) = built else { return }
        #expect(nodes.count == 11_110)
        let cancelled = await onSmallStack { root.cancel() }
        #expect(cancelled == true)
        #expect(await eventually(timeout: .seconds(30)) { nodes.allSatisfy { $0.isCancelled } })
        #expect(handlerRuns.value == 0)
    }

    @Test("cancelling the root of a 10,000-deep chain cancels every link without overflowing the stack")
    func cancelDeepChainDown() async {
        let built = await onSmallStack { () -> [Promise<Int>] in
            let root = Promise<Int>()
            var links = [root]
            for _ in 0..<10_000 { links.append(links[links.count - 1].then(on: .inline) { $0 }) }
            root.cancel()
            return links
        }
        guard let links = built, let end = links.last else { return }
        #expect(await end.rejectionError(within: .seconds(30)) is CancellationError)
        #expect(links.allSatisfy { $0.isCancelled })
    }

    @Test("cancelling the leaf of a 10,000-deep chain cancels up to the root without overflowing the stack")
    func cancelDeepChainUp() async {
        let root = await onSmallStack { () -> Promise<Int> in
            let root = Promise<Int>()
            var end = root
            for _ in 0..<10_000 { end = end.then(on: .inline) { $0 } }
            end.cancel()
            return root
        }
        #expect(await root?.rejectionError(within: .seconds(30)) is CancellationError)
    }

    @Test("all over 10,000 inputs fulfilled from several threads keeps every value in order")
    func allOverManyInputs() async {
        let inputs = (0..<10_000).map { _ in Promise<Int>() }
        let joined = Promise<Int>.all(inputs)
        let finished = await runOnThreads(4) { thread in
            for index in stride(from: thread, to: inputs.count, by: 4) {
                inputs[index].fulfill(index)
            }
        }
        #expect(finished)
        #expect(await joined.fulfilledValue(within: .seconds(30)) == Array(0..<10_000))
    }
}

/// Two threads meeting at every round, so that their calls overlap as closely as they can.
final class RoundBarrier: Sendable {
    private let arrived = Atomic<Int>(0)
    private let parties: Int
    private let stopRound = Atomic<Int>(.max)

    init(parties: Int) { self.parties = parties }

    /// Waits until every party has arrived for `round` (0, 1, 2, …, the same on every thread).
    ///
    /// Spins briefly, then yields between looks: with more runnable threads than cores (other
    /// suites' stress tests run at the same time) a party that only spun kept its partner off
    /// the core, and 100,000 rounds took over two minutes where they take seconds alone. The
    /// spin is short because under ThreadSanitizer each look costs tens of nanoseconds: after
    /// 100,000 of them a waiting party had burnt milliseconds of every round, and the resolve
    /// race's 100,000 rounds missed their 120 s on a loaded machine.
    func arrive(round: Int) {
        arrived.add(1, ordering: .acquiringAndReleasing)
        var spins = 0
        while arrived.load(ordering: .acquiring) < parties * (round + 1) {
            spins += 1
            if spins > 1_000 { sched_yield() }
        }
    }

    /// Names the round at which every party leaves its loop. Called by one party before it
    /// arrives at that round: a party still in an earlier round reads a later number and goes
    /// on to the barrier, and past the barrier every party reads the same one.
    func stop(at round: Int) {
        stopRound.store(round, ordering: .releasing)
    }

    /// True, on every party alike, once they have all arrived at the round named by `stop(at:)`.
    func isStopped(at round: Int) -> Bool {
        round >= stopRound.load(ordering: .acquiring)
    }

    /// The round named by `stop(at:)`, if one was: how many rounds ran before it.
    var stoppedAt: Int? {
        let round = stopRound.load(ordering: .acquiring)
        return round == .max ? nil : round
    }
}

extension BarrierRaceTests {
    @Suite("Resolve racing cancel", .serialized, .timeLimit(.minutes(3)))
    struct ResolveRacingCancelTests {
        @Test("resolve racing a cancel of the resolved promise never cancels a source that another consumer holds")
        func resolveRacingCancelKeepsSharedSource() async {
            // Arrange: each source has a consumer of its own that stays.
            let rounds = 100_000
            let sources = (0..<rounds).map { _ in Promise<Int>() }
            let kept = sources.map { $0.then(on: .inline) { $0 } }
            let adopters = (0..<rounds).map { _ in Promise<Int>() }
            let barrier = RoundBarrier(parties: 2)

            // Act: as many rounds as fit in 45 s, up to all of them. A plain build runs them
            // all in seconds; under ThreadSanitizer a round costs about a millisecond, and on a
            // loaded machine 100,000 of them did not fit in two minutes.
            let deadline = ContinuousClock.now + .seconds(45)
            let finished = await runOnThreads(2, timeout: .seconds(120)) { thread in
                for round in 0..<rounds {
                    if thread == 0, round % 1_000 == 0, ContinuousClock.now > deadline { barrier.stop(at: round) }
                    barrier.arrive(round: round)
                    if barrier.isStopped(at: round) { break }
                    if thread == 0 { adopters[round].resolve(sources[round]) } else { adopters[round].cancel() }
                }
            }

            // Assert.
            #expect(finished)
            let raced = barrier.stoppedAt ?? rounds
            #expect(raced >= 10_000, "only \(raced) rounds raced in 45 s")
            let cancelledSources = sources.filter(\.isCancelled).count
            #expect(cancelledSources == 0, "\(cancelledSources) of \(rounds) sources cancelled under a live consumer")
            let keptPending = kept.filter(\.isPending).count
            #expect(keptPending == rounds)
        }
    }
}
