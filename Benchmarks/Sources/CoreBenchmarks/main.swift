import BenchmarkSupport
import Dispatch
import Foundation
import NIOCore
import NIOEmbedded
import Promise
import Synchronization

// The core against swift-nio's EventLoopFuture, Swift's continuations and
// the raw primitives underneath, in one process and one run. Names are
// `subject.operation`; `anchor` names what a benchmark is compared with.

// MARK: 1. One pending promise, one handler, one fulfil.

let single: [Benchmark] = [
    Benchmark("promise.then+fulfill.inline", anchor: "nio.map+succeed.embedded") { n in
        for i in 0..<n {
            let promise = Promise<Int>()
            let child = promise.then(on: .inline) { $0 + 1 }
            promise.fulfill(i)
            blackHole(child)
        }
    },
    Benchmark("nio.map+succeed.embedded") { n in
        // The loop in a local, as a server holds its loop: as a global of
        // main.swift, every use went through its accessor, and nio measured
        // 20-25% slower here than in a second harness (issue 23).
        let loop = EmbeddedEventLoop()
        for i in 0..<n {
            let promise = loop.makePromise(of: Int.self)
            let child = promise.futureResult.map { $0 + 1 }
            promise.succeed(i)
            blackHole(child)
        }
    },
    Benchmark("continuation.unsafe", anchor: "nio.map+succeed.embedded") { n in
        runAsync {
            var sum = 0
            for i in 0..<n {
                sum &+= await withUnsafeContinuation { $0.resume(returning: i) }
            }
            blackHole(sum)
        }
    },
    Benchmark("continuation.checked", anchor: "nio.map+succeed.embedded") { n in
        runAsync {
            var sum = 0
            for i in 0..<n {
                sum &+= await withCheckedContinuation { $0.resume(returning: i) }
            }
            blackHole(sum)
        }
    },
    Benchmark("primitive.mutex.lock+unlock", anchor: "promise.then+fulfill.inline") { n in
        let mutex = Mutex(0)
        for _ in 0..<n { mutex.withLock { $0 &+= 1 } }
        blackHole(mutex.withLock { $0 })
    },
]

// MARK: 2. Chains, joins and cancellation of trees.

func promiseChain(_ links: Int) -> Benchmark {
    Benchmark("promise.chain\(links).inline", anchor: "nio.chain\(links).embedded") { n in
        for _ in 0..<n {
            let root = Promise<Int>()
            var tail = root
            for _ in 0..<links { tail = tail.then(on: .inline) { $0 + 1 } }
            root.fulfill(0)
            blackHole(tail)
        }
    }
}

func nioChain(_ links: Int) -> Benchmark {
    Benchmark("nio.chain\(links).embedded") { n in
        let loop = EmbeddedEventLoop()
        for _ in 0..<n {
            let root = loop.makePromise(of: Int.self)
            var tail = root.futureResult
            for _ in 0..<links { tail = tail.map { $0 + 1 } }
            root.succeed(0)
            blackHole(tail)
        }
    }
}

let joins: [Benchmark] = [
    promiseChain(10), nioChain(10), promiseChain(1000), nioChain(1000),
    Benchmark("promise.all10000", anchor: "nio.whenAllSucceed10000.embedded") { n in
        for _ in 0..<n {
            let inputs = (0..<10_000).map { _ in Promise<Int>() }
            let all = Promise.all(inputs)
            for (i, input) in inputs.enumerated() { input.fulfill(i) }
            blackHole(all)
        }
    },
    Benchmark("nio.whenAllSucceed10000.embedded") { n in
        let loop = EmbeddedEventLoop()
        for _ in 0..<n {
            let inputs = (0..<10_000).map { _ in loop.makePromise(of: Int.self) }
            let all = EventLoopFuture.whenAllSucceed(inputs.map(\.futureResult), on: loop)
            for (i, input) in inputs.enumerated() { input.succeed(i) }
            blackHole(all)
        }
    },
    Benchmark("promise.cancelTree10000", anchor: "promise.settleTree10000") { n in
        for _ in 0..<n {
            let (root, leaves) = tree()
            root.cancel()
            blackHole(leaves)
        }
    },
    Benchmark("promise.settleTree10000") { n in
        for _ in 0..<n {
            let (root, leaves) = tree()
            root.fulfill(0)
            blackHole(leaves)
        }
    },
]

/// A root with 100 children of 99 children each: 10,000 promises.
func tree() -> (Promise<Int>, [Promise<Int>]) {
    let root = Promise<Int>()
    var leaves: [Promise<Int>] = []
    leaves.reserveCapacity(9_900)
    for _ in 0..<100 {
        let child = root.then(on: .inline) { $0 }
        for _ in 0..<98 { leaves.append(child.then(on: .inline) { $0 }) }
    }
    return (root, leaves)
}

// MARK: 3. Across threads: fulfil on one, handle on another.

let crossThread: [Benchmark] = [
    Benchmark("promise.crossThread.then(on: queue)", anchor: "dispatch.async") { n in
        let queue = DispatchQueue(label: "consumer")
        let done = DispatchSemaphore(value: 0)
        for i in 0..<n {
            let promise = Promise<Int>()
            promise.then(on: queue) { value in if value == n - 1 { done.signal() } }
            promise.fulfill(i)
        }
        done.wait()
    },
    Benchmark("dispatch.async") { n in
        let queue = DispatchQueue(label: "consumer")
        let done = DispatchSemaphore(value: 0)
        for i in 0..<n {
            queue.async { if i == n - 1 { done.signal() } }
        }
        done.wait()
    },
    Benchmark("asyncStream.yield+next", anchor: "dispatch.async") { n in
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        let done = DispatchSemaphore(value: 0)
        Task {
            var count = 0
            for await _ in stream { count += 1 }
            blackHole(count)
            done.signal()
        }
        for i in 0..<n { continuation.yield(i) }
        continuation.finish()
        done.wait()
    },
]

// MARK: 4. One of each operator, for its allocation count (bench.sh counts
// them under valgrind; the timed figures come along). Each iteration makes
// its promises, wires the operator and settles it, all inline.

struct Failure: Error {}

let operators: [Benchmark] = [
    Benchmark("promise.fulfill") { n in
        for i in 0..<n {
            let promise = Promise<Int>()
            promise.fulfill(i)
            blackHole(promise)
        }
    },
    Benchmark("promise.then.settled.inline") { n in
        for i in 0..<n {
            blackHole(Promise(value: i).then(on: .inline) { $0 + 1 })
        }
    },
    Benchmark("promise.chain2.inline") { n in
        for i in 0..<n {
            let root = Promise<Int>()
            let tail = root.then(on: .inline) { $0 + 1 }.then(on: .inline) { $0 + 1 }
            root.fulfill(i)
            blackHole(tail)
        }
    },
    Benchmark("promise.recover+reject.inline") { n in
        for _ in 0..<n {
            let promise = Promise<Int>()
            let child = promise.recover(on: .inline) { _ in 0 }
            promise.reject(Failure())
            blackHole(child)
        }
    },
    Benchmark("promise.always+fulfill.inline") { n in
        for i in 0..<n {
            let promise = Promise<Int>()
            let child = promise.always(on: .inline) { blackHole($0) }
            promise.fulfill(i)
            blackHole(child)
        }
    },
    Benchmark("promise.onSettled+fulfill.inline") { n in
        for i in 0..<n {
            let promise = Promise<Int>()
            promise.onSettled(on: .inline) { blackHole($0) }
            promise.fulfill(i)
            blackHole(promise)
        }
    },
    Benchmark("promise.resolve+fulfill") { n in
        for i in 0..<n {
            let promise = Promise<Int>()
            let other = Promise<Int>()
            promise.resolve(other)
            other.fulfill(i)
            blackHole(promise)
        }
    },
    Benchmark("promise.then+cancel.inline") { n in
        for _ in 0..<n {
            let promise = Promise<Int>()
            let child = promise.then(on: .inline) { $0 + 1 }
            child.cancel()
            blackHole(child)
        }
    },
    Benchmark("promise.all2") { n in
        for i in 0..<n {
            let inputs = [Promise<Int>(), Promise<Int>()]
            let all = Promise.all(inputs)
            inputs[0].fulfill(i)
            inputs[1].fulfill(i)
            blackHole(all)
        }
    },
    Benchmark("promise.all10") { n in
        for i in 0..<n {
            let inputs = (0..<10).map { _ in Promise<Int>() }
            let all = Promise.all(inputs)
            for input in inputs { input.fulfill(i) }
            blackHole(all)
        }
    },
    Benchmark("promise.race2") { n in
        for i in 0..<n {
            let inputs = [Promise<Int>(), Promise<Int>()]
            let first = Promise.race(inputs)
            inputs[0].fulfill(i)
            inputs[1].fulfill(i)
            blackHole(first)
        }
    },
]

/// Runs `body` in a task and blocks until it is done.
func runAsync(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}

/// `--names A,B,…` times only those benchmarks (rounds interleaved as for
/// the whole list): for comparing a benchmark with its anchor quickly.
let all = single + joins + crossThread + operators
if let index = CommandLine.arguments.firstIndex(of: "--names"), index + 1 < CommandLine.arguments.count {
    let names = Set(CommandLine.arguments[index + 1].split(separator: ",").map(String.init))
    BenchmarkRunner().main(all.filter { names.contains($0.name) }, arguments: [])
} else {
    BenchmarkRunner().main(all)
}
