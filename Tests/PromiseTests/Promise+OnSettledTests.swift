import Promise
import Testing

@Suite("Promise.onSettled", .timeLimit(.minutes(5)))
struct PromiseOnSettledTests {
    @Test("onSettled runs once with the value, the error or the cancellation")
    func onSettledSeesEveryOutcome() async {
        let seen = Recorder<String>()
        let fulfilled = Promise<Int>()
        let rejected = Promise<Int>()
        let cancelled = Promise<Int>()
        fulfilled.onSettled { seen.append("fulfilled \((try? $0.get()) ?? -1)") }
        rejected.onSettled { if case .failure(let error) = $0 { seen.append("rejected \(error)") } }
        cancelled.onSettled { if case .failure(let error) = $0, error is CancellationError { seen.append("cancelled") } }
        fulfilled.fulfill(3)
        rejected.reject(TestError.boom)
        cancelled.cancel()
        fulfilled.fulfill(4)
        #expect(await eventually { seen.count == 3 })
        #expect(await holds { seen.count == 3 })
        #expect(Set(seen.values) == ["fulfilled 3", "rejected boom", "cancelled"])
    }

    @Test("onSettled registered after settling still runs, once")
    func onSettledAfterSettling() async {
        let ran = Counter()
        Promise(value: 1).onSettled { _ in ran.add() }
        #expect(await eventually { ran.value == 1 })
        #expect(await holds { ran.value == 1 })
    }

    @Test("onSettled on .inline runs inside fulfill, before it returns")
    func onSettledInline() {
        let ran = Counter()
        let promise = Promise<Int>()
        promise.onSettled(on: .inline) { _ in ran.add() }
        promise.fulfill(1)
        #expect(ran.value == 1)
    }

    @Test("onSettled is not a child: cancelling the only child still cancels the parent")
    func onSettledIsNotAChild() async {
        let seen = Recorder<Bool>()
        let parent = Promise<Int>()
        parent.onSettled { result in
            if case .failure(let error) = result { seen.append(error is CancellationError) }
        }
        parent.then { $0 }.cancel()
        #expect(await parent.rejectionError() is CancellationError)
        #expect(await eventually { seen.values == [true] })
    }

    @Test("onSettled returns the promise it observes")
    func onSettledReturnsSelf() {
        let promise = Promise<Int>()
        #expect(promise.onSettled { _ in } === promise)
    }
}
