import Promise
import Testing

@Suite("Promise.iterate", .timeLimit(.minutes(5)))
struct PromiseIterateTests {
    @Test("iterate calls the step with 0, 1, 2 … until it returns nil and collects the values in order")
    func iterateCollectsValues() async {
        let counters = Recorder<Int>()
        let loop = Promise<String>.iterate(on: .default) { step -> Promise<String>? in
            counters.append(step)
            return step < 4 ? Promise(value: "v\(step)") : nil
        }
        #expect(await loop.fulfilledValue() == ["v0", "v1", "v2", "v3"])
        #expect(counters.values == [0, 1, 2, 3, 4])
    }

    @Test("iterate whose first step returns nil fulfils with an empty array")
    func iterateEmpty() async {
        let loop = Promise<Int>.iterate(on: .default) { _ in nil }
        #expect(await loop.fulfilledValue() == [])
    }

    @Test("iterate does not take the next step until the current step's promise settles")
    func iterateIsSequential() async {
        let gates = (0..<3).map { _ in Promise<Int>() }
        let counters = Recorder<Int>()
        let loop = Promise<Int>.iterate(on: .default) { step -> Promise<Int>? in
            counters.append(step)
            return step < gates.count ? gates[step] : nil
        }
        #expect(await eventually { counters.values == [0] })
        #expect(await holds { counters.values == [0] })
        gates[0].fulfill(10)
        #expect(await eventually { counters.values == [0, 1] })
        gates[1].fulfill(11)
        gates[2].fulfill(12)
        #expect(await loop.fulfilledValue() == [10, 11, 12])
    }

    @Test("iterate rejects with a step promise's error and takes no further step")
    func iterateStopsOnRejection() async {
        let counters = Recorder<Int>()
        let loop = Promise<Int>.iterate(on: .default) { step -> Promise<Int>? in
            counters.append(step)
            return step == 1 ? Promise(error: TestError.other(1)) : Promise(value: step)
        }
        #expect(await loop.rejectionError() as? TestError == .other(1))
        #expect(await holds { counters.values == [0, 1] })
    }

    @Test("iterate rejects with the error the step throws")
    func iterateStopsOnThrow() async {
        let loop = Promise<Int>.iterate(on: .default) { step -> Promise<Int>? in
            if step == 2 { throw TestError.other(2) }
            return Promise(value: step)
        }
        #expect(await loop.rejectionError() as? TestError == .other(2))
    }

    @Test("iterate runs many synchronous steps on .inline without overflowing the stack")
    func iterateManyInlineSteps() async {
        let loop = Promise<Int>.iterate(on: .inline) { step in
            step < 20_000 ? Promise(value: step) : nil
        }
        let values = await loop.fulfilledValue()
        #expect(values?.count == 20_000)
        #expect(values?.last == 19_999)
    }

    @Test("cancelling iterate's result stops the loop and cancels the step in flight")
    func cancelIterate() async {
        let inFlight = Promise<Int>()
        let counters = Recorder<Int>()
        let loop = Promise<Int>.iterate(on: .default) { step -> Promise<Int>? in
            counters.append(step)
            return inFlight
        }
        #expect(await eventually { counters.count == 1 })
        loop.cancel()
        #expect(await inFlight.rejectionError() is CancellationError)
        #expect(loop.isCancelled)
        #expect(await holds { counters.count == 1 })
    }

    @Test("cancelling iterate gives up a step promise that another consumer holds, without cancelling it")
    func iterateCancelKeepsSharedStep() async {
        let shared = Promise<Int>()
        let other = shared.then { $0 + 1 }
        let started = Counter()
        let loop = Promise<Int>.iterate { number -> Promise<Int>? in
            guard number == 0 else { return nil }
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
}
