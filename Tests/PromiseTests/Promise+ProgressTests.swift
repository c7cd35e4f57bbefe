import Foundation
import Promise
import Testing

@Suite("Promise progress", .timeLimit(.minutes(5)))
struct PromiseProgressTests {
    @Test("a new promise reports progress 0")
    func newPromiseHasZeroProgress() {
        #expect(Promise<Int>().progress == 0)
    }

    @Test("reportProgress updates progress before it returns")
    func reportProgressIsImmediate() {
        let promise = Promise<Int>()
        promise.reportProgress(0.25)
        #expect(promise.progress == 0.25)
        promise.reportProgress(0.5)
        #expect(promise.progress == 0.5)
    }

    @Test("progress never goes backwards: a lower report is ignored")
    func progressNeverDecreases() {
        let promise = Promise<Int>()
        promise.reportProgress(0.6)
        promise.reportProgress(0.2)
        #expect(promise.progress == 0.6)
        promise.reportProgress(0.6)
        #expect(promise.progress == 0.6)
    }

    @Test("fulfilment sets progress to 1")
    func fulfilmentCompletesProgress() {
        let promise = Promise<Int>()
        promise.reportProgress(0.3)
        promise.fulfill(1)
        #expect(promise.progress == 1)
        #expect(Promise(value: 1).progress == 1)
    }

    @Test("fulfilling tells onProgress observers 1, once")
    func fulfilmentTellsObserversOne() {
        let seen = Recorder<Double>()
        let promise = Promise<Int>()
        promise.onProgress(on: .inline) { seen.append($0) }
        promise.reportProgress(0.3)
        promise.fulfill(1)
        promise.fulfill(2)
        #expect(seen.values == [0.3, 1])
    }

    @Test("a rejected promise keeps its last progress, does not tell its observers 1, and ignores later reports")
    func rejectionKeepsProgress() {
        let seen = Recorder<Double>()
        let promise = Promise<Int>()
        promise.onProgress(on: .inline) { seen.append($0) }
        promise.reportProgress(0.3)
        promise.reject(TestError.boom)
        promise.reportProgress(0.9)
        #expect(promise.progress == 0.3)
        #expect(seen.values == [0.3])
    }

    @Test("an observer registered on a fulfilled promise is told 1 at once; on a new promise, nothing")
    func lateObserverSeesCurrentProgress() {
        let seen = Recorder<Double>()
        Promise(value: 1).onProgress(on: .inline) { seen.append($0) }
        Promise<Int>().onProgress(on: .inline) { seen.append($0) }
        #expect(seen.values == [1])
    }

    @Test("onProgress observers see each increase, in increasing order")
    func observersSeeIncreasingValues() async {
        let seen = Recorder<Double>()
        let promise = Promise<Int>()
        promise.onProgress(on: .inline) { seen.append($0) }
        promise.reportProgress(0.1)
        promise.reportProgress(0.3)
        promise.reportProgress(0.2)
        promise.reportProgress(0.6)
        let values = seen.values
        #expect(values.contains(0.1))
        #expect(values.contains(0.3))
        #expect(values.contains(0.6))
        #expect(!values.contains(0.2))
        #expect(values == values.sorted())
        #expect(Set(values).count == values.count)
    }

    @Test("an onProgress observer on an asynchronous executor sees increasing values ending at the last report")
    func asyncObserverSeesIncreasingValues() async {
        let seen = Recorder<Double>()
        let promise = Promise<Int>()
        promise.onProgress { fraction in
            // An observer that does some work: the executor may be concurrent, and values
            // must still arrive in increasing order.
            usleep(50)
            seen.append(fraction)
        }
        for step in 1...200 {
            promise.reportProgress(Double(step) / 200)
        }
        #expect(await eventually { seen.values.contains(1.0) })
        // Let any delivery still in flight land before judging the order.
        try? await Task.sleep(for: .milliseconds(20))
        let values = seen.values
        #expect(values.last == 1.0)
        let backwards = zip(values, values.dropFirst()).filter { $0 >= $1 }
        #expect(backwards.count == 0, "first step that did not increase: \(String(describing: backwards.first))")
    }

    @Test("onProgress returns the promise it observes")
    func onProgressReturnsSelf() {
        let promise = Promise<Int>()
        #expect(promise.onProgress { _ in } === promise)
    }

    @Test("a then child follows its parent's progress")
    func childFollowsParent() async {
        let parent = Promise<Int>()
        let child = parent.then { $0 }
        parent.reportProgress(0.5)
        #expect(await eventually { child.progress == 0.5 })
        parent.reportProgress(0.75)
        #expect(await eventually { child.progress == 0.75 })
    }

    @Test("a then child registered after its parent reported progress starts from the parent's progress")
    func lateChildFollowsParent() async {
        let parent = Promise<Int>()
        parent.reportProgress(0.4)
        let child = parent.then { $0 }
        #expect(await eventually { child.progress == 0.4 })
    }

    @Test("a then child's progress observer sees its parent's reports")
    func childObserverSeesParentReports() async {
        let seen = Recorder<Double>()
        let parent = Promise<Int>()
        let child = parent.then { $0 }
        child.onProgress { seen.append($0) }
        parent.reportProgress(0.4)
        #expect(await eventually { seen.values.contains(0.4) })
    }

    @Test("all reports the mean of its inputs' progress")
    func allReportsMean() async {
        let first = Promise<Int>()
        let second = Promise<Int>()
        let joined = Promise<Int>.all([first, second])
        first.reportProgress(0.5)
        #expect(await eventually { joined.progress == 0.25 })
        second.reportProgress(0.5)
        #expect(await eventually { joined.progress == 0.5 })
        first.fulfill(1)
        #expect(await eventually { joined.progress == 0.75 })
        second.fulfill(2)
        #expect(await joined.fulfilledValue() == [1, 2])
        #expect(joined.progress == 1)
    }

    // Each input of `all` adds a progress observer. They were appended by
    // copying the whole array each time: 100,000 took minutes, past the
    // suite's limit; in place it is a fraction of a second.
    @Test("all over one pending input repeated 100,000 times is built in linear time and fulfils with every value")
    func allOverManyRepeatsOfOneInput() async {
        let input = Promise<Int>()
        let joined = Promise<Int>.all(Array(repeating: input, count: 100_000))
        input.reportProgress(0.5)
        #expect(await eventually { joined.progress == 0.5 })
        input.fulfill(7)
        let values = await joined.fulfilledValue()
        #expect(values?.count == 100_000)
        #expect(values?.allSatisfy { $0 == 7 } == true)
    }

    @Test("forEach reports completed elements over total")
    func forEachReportsCompletedOverTotal() async {
        let gates = (0..<4).map { _ in Promise<Int>() }
        let loop = Promise<Int>.forEach(Array(0..<4)) { index in gates[index] }
        #expect(loop.progress == 0)
        gates[0].fulfill(0)
        #expect(await eventually { loop.progress == 0.25 })
        gates[1].fulfill(1)
        #expect(await eventually { loop.progress == 0.5 })
        gates[2].fulfill(2)
        gates[3].fulfill(3)
        #expect(await loop.fulfilledValue() == [0, 1, 2, 3])
        #expect(loop.progress == 1)
    }

    @Test("progress is safe to report from many threads: it ends at the maximum")
    func concurrentReports() async {
        let promise = Promise<Int>()
        let finished = await runOnThreads(4) { thread in
            for step in 0..<250 {
                promise.reportProgress(Double(step * 4 + thread) / 1000)
            }
        }
        #expect(finished)
        #expect(promise.progress == 0.999)
    }
}
