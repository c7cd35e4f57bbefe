import Foundation
import Promise
import Testing

@Suite("Promise debugging aids", .timeLimit(.minutes(5)))
struct PromiseDebugTests {
    @Test("a promise has no name until one is set, and keeps the name it is given")
    func name() {
        let promise = Promise<Int>()
        #expect(promise.name == nil)
        promise.name = "load user"
        #expect(promise.name == "load user")
        promise.name = nil
        #expect(promise.name == nil)
    }

    @Test("serial numbers increase in creation order")
    func serialNumbersIncrease() {
        let promises = (0..<100).map { _ in Promise<Int>() }
        let serials = promises.map(\.serialNumber)
        #expect(zip(serials, serials.dropFirst()).allSatisfy { $0 < $1 })
        let child = promises[0].then { $0 }
        #expect(child.serialNumber > serials.last!)
    }

    @Test("serial numbers are unique across threads, also past the blocks of numbers threads take, and increase on each thread")
    func serialNumbersUnique() async {
        let perThread = (0..<4).map { _ in Recorder<UInt64>() }
        let finished = await runOnThreads(4) { thread in
            for _ in 0..<3_000 { perThread[thread].append(Promise<Int>().serialNumber) }
        }
        #expect(finished)
        let all = perThread.flatMap(\.values)
        #expect(Set(all).count == 12_000)
        #expect(!all.contains(0))
        for serials in perThread.map(\.values) {
            #expect(zip(serials, serials.dropFirst()).allSatisfy { $0 < $1 })
        }
    }

    @Test("generation is the depth in the chain: 0 for a root, parent's + 1 for then, recover and always children")
    func generationIsDepth() {
        let root = Promise<Int>()
        let child = root.then { $0 }
        let grandchild = child.recover { _ in 0 }
        let greatGrandchild = grandchild.always { _ in }
        #expect(root.generation == 0)
        #expect(Promise(value: 1).generation == 0)
        #expect(child.generation == 1)
        #expect(grandchild.generation == 2)
        #expect(greatGrandchild.generation == 3)
        #expect(root.then { $0 }.generation == 1)
    }

    @Test("debugDescription names every link of a pending chain with its serial number")
    func debugDescriptionDescribesChain() {
        let root = Promise<Int>()
        root.name = "fetch"
        let middle = root.then { $0 + 1 }
        middle.name = "parse"
        let leaf = middle.then { "\($0)" }
        leaf.name = "render"
        let text = leaf.debugDescription
        for name in ["fetch", "parse", "render"] {
            #expect(text.contains(name), "\(name) missing from \(text)")
        }
        for serial in [root.serialNumber, middle.serialNumber, leaf.serialNumber] {
            #expect(text.contains("\(serial)"), "serial \(serial) missing from \(text)")
        }
        // The leaf comes first, its ancestors after it.
        if let leafAt = text.range(of: "render"), let rootAt = text.range(of: "fetch") {
            #expect(leafAt.lowerBound < rootAt.lowerBound)
        }
    }

    @Test("debugDescription changes when the promise settles")
    func debugDescriptionShowsState() {
        let promise = Promise<Int>()
        let before = promise.debugDescription
        promise.fulfill(1)
        #expect(promise.debugDescription != before)
    }
}
