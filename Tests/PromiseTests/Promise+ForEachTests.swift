import Foundation
import Promise
import Testing

@Suite("Promise.forEach", .timeLimit(.minutes(5)))
struct PromiseForEachTests {
    @Test("forEach runs the body for every element and fulfils with the results in element order")
    func forEachCollectsResults() async {
        let loop = Promise<String>.forEach([3, 1, 2]) { element in
            Promise(value: "#\(element)")
        }
        #expect(await loop.fulfilledValue() == ["#3", "#1", "#2"])
    }

    @Test("forEach over an empty sequence fulfils with an empty array")
    func forEachEmpty() async {
        let loop = Promise<Int>.forEach([Int]()) { Promise(value: $0) }
        #expect(await loop.fulfilledValue() == [])
    }

    @Test("serial forEach (the default) starts an element only after the previous one settled")
    func forEachIsSerialByDefault() async {
        let gates = (0..<3).map { _ in Promise<Int>() }
        let started = Recorder<Int>()
        let loop = Promise<Int>.forEach(Array(0..<3)) { element -> Promise<Int> in
            started.append(element)
            return gates[element]
        }
        #expect(await eventually { started.values == [0] })
        #expect(await holds { started.values == [0] })
        gates[0].fulfill(0)
        #expect(await eventually { started.values == [0, 1] })
        gates[1].fulfill(1)
        gates[2].fulfill(2)
        #expect(await loop.fulfilledValue() == [0, 1, 2])
        #expect(started.values == [0, 1, 2])
    }

    @Test("bounded forEach keeps at most maxConcurrent bodies in flight, and uses all of them")
    func forEachBoundedConcurrency() async {
        let count = 12
        let gates = (0..<count).map { _ in Promise<Int>() }
        let started = Recorder<Int>()
        let loop = Promise<Int>.forEach(Array(0..<count), maxConcurrent: 3) { element -> Promise<Int> in
            started.append(element)
            return gates[element]
        }
        #expect(await eventually { started.count == 3 })
        #expect(await holds { started.count == 3 })
        // Each completion lets exactly one more start.
        for element in 0..<count {
            gates[element].fulfill(element * 2)
            let expected = min(count, element + 4)
            #expect(await eventually { started.count == expected })
        }
        #expect(await loop.fulfilledValue() == (0..<count).map { $0 * 2 })
        #expect(Set(started.values) == Set(0..<count))
    }

    @Test("bounded forEach keeps results in element order when elements finish out of order")
    func forEachOrderWithConcurrency() async {
        let gates = (0..<3).map { _ in Promise<String>() }
        let loop = Promise<String>.forEach(Array(0..<3), maxConcurrent: 3) { gates[$0] }
        gates[2].fulfill("c")
        gates[1].fulfill("b")
        gates[0].fulfill("a")
        #expect(await loop.fulfilledValue() == ["a", "b", "c"])
    }

    @Test("forEach rejects with a body promise's error and starts no further element")
    func forEachStopsOnRejection() async {
        let started = Recorder<Int>()
        let loop = Promise<Int>.forEach(Array(0..<5)) { element -> Promise<Int> in
            started.append(element)
            return element == 1 ? Promise(error: TestError.other(1)) : Promise(value: element)
        }
        #expect(await loop.rejectionError() as? TestError == .other(1))
        #expect(await holds { started.values == [0, 1] })
    }

    @Test("forEach rejects with the error the body throws")
    func forEachBodyThrows() async {
        let loop = Promise<Int>.forEach(Array(0..<3), on: .default) { element -> Promise<Int> in
            if element == 2 { throw TestError.other(2) }
            return Promise(value: element)
        }
        #expect(await loop.rejectionError() as? TestError == .other(2))
    }

    @Test("forEach over many already fulfilled bodies on .inline does not overflow the stack")
    func forEachManyInline() async {
        let loop = Promise<Int>.forEach(Array(0..<20_000), on: .inline) { Promise(value: $0) }
        let values = await loop.fulfilledValue()
        #expect(values?.count == 20_000)
        #expect(values?.last == 19_999)
    }

    @Test("cancelling forEach's result cancels the bodies in flight and starts no more")
    func cancelForEach() async {
        let gates = (0..<4).map { _ in Promise<Int>() }
        let started = Recorder<Int>()
        let loop = Promise<Int>.forEach(Array(0..<4), maxConcurrent: 2) { element -> Promise<Int> in
            started.append(element)
            return gates[element]
        }
        #expect(await eventually { started.count == 2 })
        loop.cancel()
        #expect(await gates[0].rejectionError() is CancellationError)
        #expect(await gates[1].rejectionError() is CancellationError)
        #expect(await holds { started.count == 2 })
    }

    @Test("cancelling forEach gives up an element promise that another consumer holds, without cancelling it")
    func forEachCancelKeepsSharedElement() async {
        let shared = Promise<Int>()
        let other = shared.then { $0 + 1 }
        let started = Counter()
        let loop = Promise<Int>.forEach([1]) { _ -> Promise<Int> in
            started.add()
            return shared
        }
        #expect(await eventually { started.value == 1 })
        #expect(await holds { loop.isPending })
        loop.cancel()
        #expect(await holds(for: .milliseconds(100)) { shared.isPending })
        shared.fulfill(1)
        #expect(await other.fulfilledValue() == 2)
    }

    @Test("cancelling forEach while the body runs cancels the promise the body then returns")
    func forEachCancelWhileBodyRuns() async {
        let element = Promise<Int>()
        let started = Counter()
        let release = LockedBox(false)
        let loop = Promise<Int>.forEach([1]) { _ -> Promise<Int> in
            started.add()
            let deadline = ContinuousClock.now.advanced(by: .seconds(30))
            while !release.value && ContinuousClock.now < deadline { usleep(1_000) }
            return element
        }
        #expect(await eventually { started.value == 1 })
        loop.cancel()
        release.value = true
        #expect(await element.rejectionError() is CancellationError)
    }
}
