import Promise
import Testing

@Suite("Promise.always", .timeLimit(.minutes(5)))
struct PromiseAlwaysTests {
    @Test("always runs on fulfilment, receives the value and passes it on")
    func alwaysOnFulfilment() async {
        let seen = Recorder<Int?>()
        let child = Promise(value: 3).always { result in
            seen.append(try? result.get())
        }
        #expect(await child.fulfilledValue() == 3)
        #expect(seen.values == [3])
    }

    @Test("always runs on rejection, receives the error and passes it on")
    func alwaysOnRejection() async {
        let seen = Recorder<TestError?>()
        let child = Promise<Int>(error: TestError.other(8)).always { result in
            if case .failure(let error) = result { seen.append(error as? TestError) }
        }
        #expect(await child.rejectionError() as? TestError == .other(8))
        #expect(seen.values == [.other(8)])
    }

    @Test("always runs on cancellation with a CancellationError")
    func alwaysOnCancel() async {
        let seen = Recorder<Bool>()
        let promise = Promise<Int>()
        promise.always { result in
            if case .failure(let error) = result { seen.append(error is CancellationError) }
        }
        promise.cancel()
        #expect(await eventually { seen.count == 1 })
        #expect(seen.values == [true])
    }

    @Test("always registered after cancellation still runs")
    func alwaysAfterCancel() async {
        let ran = Counter()
        let promise = Promise<Int>()
        promise.cancel()
        promise.always { _ in ran.add() }
        #expect(await eventually { ran.value == 1 })
    }

    @Test("always runs exactly once for a promise that is settled many times over")
    func alwaysRunsOnce() async {
        let ran = Counter()
        let promise = Promise<Int>()
        promise.always(on: .inline) { _ in ran.add() }
        promise.fulfill(1)
        promise.fulfill(2)
        promise.reject(TestError.boom)
        promise.cancel()
        #expect(ran.value == 1)
        #expect(await holds { ran.value == 1 })
    }

    @Test("always in the middle of a chain does not change the value")
    func alwaysInChain() async {
        let end = Promise(value: 1)
            .always { _ in }
            .then { $0 + 1 }
        #expect(await end.fulfilledValue() == 2)
    }
}
