import Promise
import Testing

@Suite("Promise.allSettled", .timeLimit(.minutes(5)))
struct PromiseAllSettledTests {
    @Test("allSettled fulfils with every result in input order once all settle")
    func allSettledKeepsOrder() async {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let joined = Promise<Int>.allSettled(inputs)
        inputs[2].fulfill(2)
        inputs[0].reject(TestError.other(0))
        #expect(await holds { joined.isPending })
        inputs[1].fulfill(1)
        guard let results = await joined.fulfilledValue() else { return }
        #expect(results.count == 3)
        if case .failure(let error) = results[0] {
            #expect(error as? TestError == .other(0))
        } else {
            Issue.record("results[0] should be a failure")
        }
        #expect((try? results[1].get()) == 1)
        #expect((try? results[2].get()) == 2)
    }

    @Test("allSettled fulfils even when every input rejects")
    func allSettledAllRejected() async {
        let joined = Promise<Int>.allSettled([Promise(error: TestError.boom), Promise(error: TestError.boom)])
        let results = await joined.fulfilledValue()
        #expect(results?.count == 2)
        #expect(results?.allSatisfy { (try? $0.get()) == nil } == true)
    }

    @Test("allSettled records a cancelled input as a CancellationError failure")
    func allSettledWithCancelledInput() async {
        let cancelled = Promise<Int>()
        let joined = Promise<Int>.allSettled([cancelled, Promise(value: 1)])
        cancelled.cancel()
        guard let results = await joined.fulfilledValue() else { return }
        if case .failure(let error) = results[0] {
            #expect(error is CancellationError)
        } else {
            Issue.record("results[0] should be a failure")
        }
    }

    @Test("allSettled of no promises fulfils with an empty array")
    func allSettledEmpty() async {
        #expect(await Promise<Int>.allSettled([]).fulfilledValue()?.isEmpty == true)
    }
}
