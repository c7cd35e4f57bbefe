import Promise
import Testing

@Suite("Promise.recover", .timeLimit(.minutes(5)))
struct PromiseRecoverTests {
    @Test("recover on a rejected promise receives the error and fulfils with its value")
    func recoverReplacesError() async {
        let seen = Recorder<TestError?>()
        let child = Promise<Int>(error: TestError.other(4)).recover { error -> Int in
            seen.append(error as? TestError)
            return -1
        }
        #expect(await child.fulfilledValue() == -1)
        #expect(seen.values == [.other(4)])
    }

    @Test("recover on a fulfilled promise is skipped and the value passes through")
    func recoverSkippedOnFulfilment() async {
        let ran = Counter()
        let child = Promise(value: 8).recover { _ -> Int in
            ran.add()
            return 0
        }
        #expect(await child.fulfilledValue() == 8)
        #expect(ran.value == 0)
    }

    @Test("recover runs once the pending parent rejects")
    func recoverWaitsForRejection() async {
        let parent = Promise<String>()
        let child = parent.recover { _ in "fallback" }
        #expect(await holds { child.isPending })
        parent.reject(TestError.boom)
        #expect(await child.fulfilledValue() == "fallback")
    }

    @Test("a recover handler that throws rejects the child with the new error")
    func recoverThrowRejects() async {
        let child = Promise<Int>(error: TestError.boom).recover { (_: any Error) -> Int in
            throw TestError.other(2)
        }
        #expect(await child.rejectionError() as? TestError == .other(2))
    }

    @Test("a recover handler that returns a promise is adopted")
    func recoverAdoptsPromise() async {
        let inner = Promise<Int>()
        let child: Promise<Int> = Promise<Int>(error: TestError.boom).recover(on: .inline) { _ in inner }
        #expect(await holds { child.isPending })
        inner.fulfill(12)
        #expect(await child.fulfilledValue() == 12)
    }

    @Test("a recover handler that returns a rejected promise rejects the child with its error")
    func recoverAdoptsRejectedPromise() async {
        let child: Promise<Int> = Promise<Int>(error: TestError.boom).recover { _ in
            Promise<Int>(error: TestError.other(6))
        }
        #expect(await child.rejectionError() as? TestError == .other(6))
    }

    @Test("recover at the end of a chain catches an error from its start, skipping the thens")
    func recoverCatchesChainError() async {
        let thens = Counter()
        let root = Promise<Int>()
        let end = root
            .then { value -> Int in thens.add(); return value }
            .then { value -> Int in thens.add(); return value }
            .recover { error -> Int in (error as? TestError) == .other(3) ? 33 : -1 }
        root.reject(TestError.other(3))
        #expect(await end.fulfilledValue() == 33)
        #expect(thens.value == 0)
    }

    @Test("then after recover continues with the recovered value")
    func thenAfterRecover() async {
        let end = Promise<Int>(error: TestError.boom)
            .recover { _ in 5 }
            .then { $0 * 2 }
        #expect(await end.fulfilledValue() == 10)
    }

    @Test("only the first recover in a chain runs when it succeeds")
    func onlyFirstRecoverRuns() async {
        let second = Counter()
        let end = Promise<Int>(error: TestError.boom)
            .recover { _ in 1 }
            .recover { _ -> Int in second.add(); return 2 }
        #expect(await end.fulfilledValue() == 1)
        #expect(second.value == 0)
    }
}
