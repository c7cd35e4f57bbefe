import Promise
import Testing

@Suite("Promise state", .timeLimit(.minutes(5)))
struct PromiseStateTests {
    @Test("a new promise is pending with no result")
    func newPromiseIsPending() {
        let promise = Promise<Int>()
        #expect(promise.isPending)
        #expect(!promise.isFulfilled)
        #expect(!promise.isRejected)
        #expect(!promise.isCancelled)
        #expect(promise.result == nil)
    }

    @Test("init(value:) is already fulfilled with the value")
    func initWithValueIsFulfilled() {
        let promise = Promise(value: 42)
        #expect(promise.isFulfilled)
        #expect(!promise.isPending)
        #expect(!promise.isRejected)
        #expect(!promise.isCancelled)
        #expect(promise.fulfilledNow == 42)
    }

    @Test("init(error:) is already rejected with the error, and not cancelled")
    func initWithErrorIsRejected() {
        let promise = Promise<Int>(error: TestError.boom)
        #expect(promise.isRejected)
        #expect(!promise.isPending)
        #expect(!promise.isFulfilled)
        #expect(!promise.isCancelled)
        #expect(promise.errorNow as? TestError == .boom)
    }

    @Test("fulfill settles the promise and returns true")
    func fulfillSettles() {
        let promise = Promise<String>()
        #expect(promise.fulfill("done"))
        #expect(promise.isFulfilled)
        #expect(promise.fulfilledNow == "done")
    }

    @Test("reject settles the promise and returns true")
    func rejectSettles() {
        let promise = Promise<String>()
        #expect(promise.reject(TestError.other(7)))
        #expect(promise.isRejected)
        #expect(!promise.isCancelled)
        #expect(promise.errorNow as? TestError == .other(7))
    }

    @Test("rejecting with CancellationError makes the promise count as cancelled")
    func rejectWithCancellationErrorIsCancelled() {
        let promise = Promise<Int>()
        promise.reject(CancellationError())
        #expect(promise.isCancelled)
        #expect(promise.isRejected)
    }

    @Test("a Void promise can be fulfilled with ()")
    func voidPromise() {
        let promise = Promise<Void>()
        #expect(promise.fulfill(()))
        #expect(promise.isFulfilled)
    }
}
