import Promise
import Testing

@Suite("Promise.all and its join policies", .timeLimit(.minutes(5)))
struct PromiseAllTests {
    // MARK: Fail fast (the default)

    @Test("all fulfils with every value in input order, whatever order they settle in")
    func allKeepsInputOrder() async {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let joined = Promise<Int>.all(inputs)
        inputs[2].fulfill(30)
        inputs[0].fulfill(10)
        #expect(await holds { joined.isPending })
        inputs[1].fulfill(20)
        #expect(await joined.fulfilledValue() == [10, 20, 30])
    }

    @Test("all of no promises fulfils with an empty array")
    func allOfNothing() async {
        #expect(await Promise<Int>.all([]).fulfilledValue() == [])
    }

    @Test("all rejects with the first error without waiting for the other inputs")
    func allFailsFast() async {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let joined = Promise<Int>.all(inputs)
        inputs[1].reject(TestError.other(1))
        #expect(await joined.rejectionError() as? TestError == .other(1))
    }

    @Test("all with the failFast policy behaves as plain all")
    func failFastPolicy() async {
        let ok = Promise<Int>.all([Promise(value: 1), Promise(value: 2)], policy: .failFast)
        #expect(await ok.fulfilledValue() == [1, 2])
        let pending = Promise<Int>()
        let failed = Promise<Int>.all([pending, Promise(error: TestError.boom)], policy: .failFast)
        #expect(await failed.rejectionError() as? TestError == .boom)
    }

    @Test("all over already settled inputs settles")
    func allOverSettledInputs() async {
        let joined = Promise<String>.all([Promise(value: "a"), Promise(value: "b")])
        #expect(await joined.fulfilledValue() == ["a", "b"])
    }

    // MARK: All errors

    @Test("the allErrors policy waits for every input, then rejects with every failure and its index")
    func allErrorsCollectsFailures() async {
        let inputs = (0..<4).map { _ in Promise<Int>() }
        let joined = Promise<Int>.all(inputs, policy: .allErrors)
        inputs[3].reject(TestError.other(3))
        inputs[1].reject(TestError.other(1))
        inputs[0].fulfill(0)
        #expect(await holds { joined.isPending })
        inputs[2].fulfill(2)
        let error = await joined.rejectionError()
        let aggregate = try? #require(error as? AggregateError)
        let failures = (aggregate?.failures ?? []).sorted { $0.index < $1.index }
        #expect(failures.map(\.index) == [1, 3])
        #expect(failures.map { $0.error as? TestError } == [.other(1), .other(3)])
    }

    @Test("the allErrors policy fulfils with every value when nothing fails")
    func allErrorsWithoutFailures() async {
        let joined = Promise<Int>.all([Promise(value: 1), Promise(value: 2)], policy: .allErrors)
        #expect(await joined.fulfilledValue() == [1, 2])
    }

    // MARK: Ignore errors

    @Test("the ignoreErrors policy fulfils with the fulfilled values in input order")
    func ignoreErrorsDropsFailures() async {
        let inputs = (0..<4).map { _ in Promise<Int>() }
        let joined = Promise<Int>.all(inputs, policy: .ignoreErrors)
        inputs[3].fulfill(3)
        inputs[0].reject(TestError.boom)
        inputs[2].reject(TestError.boom)
        #expect(await holds { joined.isPending })
        inputs[1].fulfill(1)
        #expect(await joined.fulfilledValue() == [1, 3])
    }

    @Test("the ignoreErrors policy fulfils with an empty array when every input fails")
    func ignoreErrorsAllFailed() async {
        let joined = Promise<Int>.all(
            [Promise(error: TestError.boom), Promise(error: TestError.other(2))],
            policy: .ignoreErrors
        )
        #expect(await joined.fulfilledValue() == [])
    }

    // MARK: Replace errors with nil

    @Test("allReplacingErrorsWithNil puts nil where an input failed, in input order")
    func replacingErrorsWithNil() async {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let joined = Promise<Int>.allReplacingErrorsWithNil(inputs)
        inputs[1].reject(TestError.boom)
        inputs[2].fulfill(3)
        #expect(await holds { joined.isPending })
        inputs[0].fulfill(1)
        #expect(await joined.fulfilledValue() == [1, nil, 3])
    }

    // MARK: Keyed

    @Test("keyed all always fulfils once every input settles, with values, errors and an error count")
    func keyedAll() async {
        let a = Promise<Int>()
        let b = Promise<Int>()
        let c = Promise<Int>()
        let joined = Promise<Int>.all(["a": a, "b": b, "c": c])
        a.fulfill(1)
        b.reject(TestError.other(2))
        #expect(await holds { joined.isPending })
        c.fulfill(3)
        let results = await joined.fulfilledValue()
        #expect(results?.values == ["a": 1, "c": 3])
        #expect(results?.errorCount == 1)
        #expect(results?.errors.count == 1)
        #expect(results?.errors["b"] as? TestError == .other(2))
        #expect(results?.results.count == 3)
        if case .success(let value)? = results?.results["a"] {
            #expect(value == 1)
        } else {
            Issue.record("results[\"a\"] should be a success")
        }
    }

    @Test("keyed all fulfils even when every input fails")
    func keyedAllEveryInputFails() async {
        let joined = Promise<Int>.all([1: Promise<Int>(error: TestError.boom), 2: Promise<Int>(error: TestError.boom)])
        let results = await joined.fulfilledValue()
        #expect(results?.errorCount == 2)
        #expect(results?.values.isEmpty == true)
    }

    @Test("keyed all over an empty dictionary fulfils with no results")
    func keyedAllEmpty() async {
        let empty: [String: Promise<Int>] = [:]
        let results = await Promise<Int>.all(empty).fulfilledValue()
        #expect(results?.errorCount == 0)
        #expect(results?.results.isEmpty == true)
    }

    // MARK: Cancellation through all

    @Test("cancelling the result of all cancels inputs that feed nothing else")
    func cancellingAllCancelsInputs() async {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let joined = Promise<Int>.all(inputs)
        joined.cancel()
        for input in inputs {
            #expect(await input.rejectionError() is CancellationError)
        }
    }

    @Test("an input of all that has another child is not cancelled with the result of all")
    func cancellingAllKeepsSharedInput() async {
        let shared = Promise<Int>()
        let other = Promise<Int>()
        let sibling = shared.then { $0 }
        let joined = Promise<Int>.all([shared, other])
        joined.cancel()
        #expect(await other.rejectionError() is CancellationError)
        #expect(await holds { shared.isPending && sibling.isPending })
    }
}
