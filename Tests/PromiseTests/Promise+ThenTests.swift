import Promise
import Testing

@Suite("Promise.then", .timeLimit(.minutes(5)))
struct PromiseThenTests {
    @Test("then on a fulfilled promise fulfils the child with the handler's value")
    func thenTransformsValue() async {
        let child = Promise(value: 2).then { $0 * 21 }
        #expect(await child.fulfilledValue() == 42)
    }

    @Test("then on a pending promise runs once the parent is fulfilled")
    func thenWaitsForParent() async {
        let parent = Promise<Int>()
        let ran = Counter()
        let child = parent.then { value -> Int in
            ran.add()
            return value + 1
        }
        #expect(await holds { ran.value == 0 && child.isPending })
        parent.fulfill(1)
        #expect(await child.fulfilledValue() == 2)
        #expect(ran.value == 1)
    }

    @Test("then can change the value type")
    func thenChangesType() async {
        let child: Promise<String> = Promise(value: 7).then(on: .inline) { "#\($0)" }
        #expect(child.fulfilledNow == "#7")
    }

    @Test("a handler that throws rejects the child with that error")
    func thenThrowRejects() async {
        let child = Promise(value: 1).then { (_: Int) -> Int in throw TestError.other(1) }
        #expect(await child.rejectionError() as? TestError == .other(1))
    }

    @Test("a handler that returns a fulfilled promise fulfils the child with its value")
    func thenAdoptsFulfilledPromise() async {
        let child: Promise<Int> = Promise(value: 1).then { Promise(value: $0 + 10) }
        #expect(await child.fulfilledValue() == 11)
    }

    @Test("a handler that returns a pending promise leaves the child pending until it settles")
    func thenAdoptsPendingPromise() async {
        let inner = Promise<String>()
        let child: Promise<String> = Promise(value: 1).then(on: .inline) { _ in inner }
        #expect(await holds { child.isPending })
        inner.fulfill("late")
        #expect(await child.fulfilledValue() == "late")
    }

    @Test("a handler that returns a rejected promise rejects the child with its error")
    func thenAdoptsRejectedPromise() async {
        let child: Promise<Int> = Promise(value: 1).then { _ in Promise<Int>(error: TestError.other(3)) }
        #expect(await child.rejectionError() as? TestError == .other(3))
    }

    @Test("a handler that returns a promise rejected later rejects the child then")
    func thenAdoptsLaterRejection() async {
        let inner = Promise<Int>()
        let child: Promise<Int> = Promise(value: 1).then(on: .inline) { _ in inner }
        inner.reject(TestError.boom)
        #expect(await child.rejectionError() as? TestError == .boom)
    }

    @Test("a rejected parent skips the handler and rejects the child with the same error")
    func thenSkippedOnRejection() async {
        let ran = Counter()
        let child = Promise<Int>(error: TestError.other(5)).then { value -> Int in
            ran.add()
            return value
        }
        #expect(await child.rejectionError() as? TestError == .other(5))
        #expect(ran.value == 0)
    }

    @Test("chained handlers run in sequence, each receiving the previous value")
    func thenChain() async {
        let order = Recorder<String>()
        let root = Promise<Int>()
        let end = root
            .then { value -> Int in order.append("a"); return value + 1 }
            .then { value -> Int in order.append("b"); return value * 10 }
            .then { value -> String in order.append("c"); return "\(value)" }
        root.fulfill(4)
        #expect(await end.fulfilledValue() == "50")
        #expect(order.values == ["a", "b", "c"])
    }

    @Test("every then on one promise receives the same value")
    func thenFanOut() async {
        let root = Promise<Int>()
        let children = (0..<10).map { offset in root.then { $0 + offset } }
        root.fulfill(100)
        for (offset, child) in children.enumerated() {
            #expect(await child.fulfilledValue() == 100 + offset)
        }
    }

    @Test("then works on Void promises")
    func thenOnVoid() async {
        let root = Promise<Void>()
        let child = root.then { "fired" }
        root.fulfill(())
        #expect(await child.fulfilledValue() == "fired")
    }

    @Test("an error thrown deep in a chain reaches the end of the chain unchanged")
    func thenErrorPropagatesThroughChain() async {
        let ran = Counter()
        let end = Promise(value: 1)
            .then { (_: Int) -> Int in throw TestError.other(9) }
            .then { value -> Int in ran.add(); return value }
            .then { value -> Int in ran.add(); return value }
        #expect(await end.rejectionError() as? TestError == .other(9))
        #expect(ran.value == 0)
    }
}
