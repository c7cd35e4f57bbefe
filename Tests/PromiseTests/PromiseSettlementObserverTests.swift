import Promise
import Testing

/// Writes down how its promise had ended each time it is told.
private final class RecordingObserver: PromiseSettlementObserver {
    let promise: Promise<Int>
    let seen = Recorder<String>()

    init(_ promise: Promise<Int>) {
        self.promise = promise
    }

    func promiseSettled() {
        seen.append(promise.isCancelled ? "cancelled" : promise.isFulfilled ? "fulfilled" : "rejected")
    }
}

@Suite("Promise.notifySettlement", .timeLimit(.minutes(5)))
struct PromiseSettlementObserverTests {
    @Test("a cancel reaches the observer once, inside cancel()")
    func cancelReachesObserver() {
        let observer = RecordingObserver(Promise<Int>())
        observer.promise.notifySettlement(to: observer)
        #expect(observer.seen.values.isEmpty)
        #expect(observer.promise.cancel())
        #expect(observer.seen.values == ["cancelled"])
        #expect(!observer.promise.cancel())
        #expect(!observer.promise.fulfill(1))
        #expect(observer.seen.values == ["cancelled"])
    }

    @Test("a fulfil reaches the observer once; a cancel after it changes nothing")
    func settleThenCancel() {
        let observer = RecordingObserver(Promise<Int>())
        observer.promise.notifySettlement(to: observer)
        #expect(observer.promise.fulfill(7))
        #expect(observer.seen.values == ["fulfilled"])
        #expect(!observer.promise.cancel())
        #expect(observer.promise.result.flatMap { try? $0.get() } == 7)
        #expect(observer.seen.values == ["fulfilled"])
    }

    @Test("a rejection with CancellationError reads as cancelled to the observer")
    func rejectionWithCancellationError() {
        let observer = RecordingObserver(Promise<Int>())
        observer.promise.notifySettlement(to: observer)
        observer.promise.reject(CancellationError())
        #expect(observer.seen.values == ["cancelled"])
    }

    @Test("a cancel of an ancestor reaches the observer of a pending descendant")
    func ancestorCancelReachesObserver() {
        let root = Promise<Int>()
        let observer = RecordingObserver(root.then(on: .inline) { $0 + 1 })
        observer.promise.notifySettlement(to: observer)
        root.cancel()
        #expect(observer.seen.values == ["cancelled"])
    }

    @Test("an observer is no child: cancelling the only child still cancels the promise")
    func observerIsNoChild() {
        let observer = RecordingObserver(Promise<Int>())
        observer.promise.notifySettlement(to: observer)
        let child = observer.promise.then(on: .inline) { $0 }
        child.cancel()
        #expect(observer.promise.isCancelled)
        #expect(observer.seen.values == ["cancelled"])
    }

    @Test("an observer registered after settling is told at once, once")
    func registeredAfterSettling() {
        let observer = RecordingObserver(Promise(value: 3))
        observer.promise.notifySettlement(to: observer)
        #expect(observer.seen.values == ["fulfilled"])
    }

    @Test("the promise keeps its observer while pending and lets it go once settled")
    func keepsObserverUntilSettled() {
        let promise = Promise<Int>()
        weak var weakObserver: RecordingObserver?
        do {
            let observer = RecordingObserver(promise)
            weakObserver = observer
            promise.notifySettlement(to: observer)
        }
        #expect(weakObserver != nil)
        promise.fulfill(1)
        #expect(weakObserver == nil)
    }
}
