import Promise
import Testing

@Suite("Promise.race and Promise.any", .timeLimit(.minutes(5)))
struct PromiseRaceAnyTests {
    @Test("race fulfils with the first input to fulfil")
    func raceFirstFulfilment() async {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let winner = Promise<Int>.race(inputs)
        inputs[2].fulfill(3)
        inputs[0].fulfill(1)
        #expect(await winner.fulfilledValue() == 3)
    }

    @Test("race rejects when the first input to settle rejects")
    func raceFirstRejection() async {
        let inputs = (0..<2).map { _ in Promise<Int>() }
        let winner = Promise<Int>.race(inputs)
        inputs[1].reject(TestError.other(1))
        #expect(await winner.rejectionError() as? TestError == .other(1))
        inputs[0].fulfill(0)
        #expect(await holds { winner.isRejected })
    }

    @Test("race over an already settled input settles with it")
    func raceSettledInput() async {
        let winner = Promise<Int>.race([Promise<Int>(), Promise(value: 9)])
        #expect(await winner.fulfilledValue() == 9)
    }

    @Test("race of no promises rejects with PromiseError.emptyInput")
    func raceEmpty() async {
        #expect(await Promise<Int>.race([]).rejectionError() as? PromiseError == .emptyInput)
    }

    @Test("any fulfils with the first input to fulfil, ignoring earlier rejections")
    func anyFirstFulfilment() async {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let first = Promise<Int>.any(inputs)
        inputs[0].reject(TestError.boom)
        #expect(await holds { first.isPending })
        inputs[2].fulfill(2)
        #expect(await first.fulfilledValue() == 2)
    }

    @Test("any rejects with an AggregateError of every failure when every input rejects")
    func anyAllRejected() async {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let first = Promise<Int>.any(inputs)
        inputs[2].reject(TestError.other(2))
        inputs[0].reject(TestError.other(0))
        #expect(await holds { first.isPending })
        inputs[1].reject(TestError.other(1))
        let error = await first.rejectionError()
        let aggregate = try? #require(error as? AggregateError)
        let failures = (aggregate?.failures ?? []).sorted { $0.index < $1.index }
        #expect(failures.map(\.index) == [0, 1, 2])
        #expect(failures.map { $0.error as? TestError } == [.other(0), .other(1), .other(2)])
    }

    @Test("any of no promises rejects with PromiseError.emptyInput")
    func anyEmpty() async {
        #expect(await Promise<Int>.any([]).rejectionError() as? PromiseError == .emptyInput)
    }

    @Test("cancelling the result of race cancels the inputs that feed nothing else")
    func cancellingRaceCancelsInputs() async {
        let inputs = (0..<2).map { _ in Promise<Int>() }
        Promise<Int>.race(inputs).cancel()
        for input in inputs {
            #expect(await input.rejectionError() is CancellationError)
        }
    }
}
