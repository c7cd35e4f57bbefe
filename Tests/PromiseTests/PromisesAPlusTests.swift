import Dispatch
import Promise
import Testing

/// The rules of Promises/A+ 1.1 as they read for a typed Swift API: `then` is onFulfilled,
/// `recover` is onRejected, `resolve(_:)` and promise-returning handlers are the resolution
/// procedure (2.3). Section numbers refer to the specification.
@Suite("Promises/A+ 1.1", .timeLimit(.minutes(5)))
struct PromisesAPlusTests {
    // MARK: 2.1 Promise states

    @Test("2.1.2: a fulfilled promise never changes; later settles return false")
    func fulfilledNeverChanges() {
        let promise = Promise<Int>()
        #expect(promise.fulfill(1))
        #expect(!promise.fulfill(2))
        #expect(!promise.reject(TestError.boom))
        #expect(!promise.resolve(Promise(value: 3)))
        #expect(!promise.cancel())
        #expect(promise.fulfilledNow == 1)
    }

    @Test("2.1.3: a rejected promise never changes; later settles return false")
    func rejectedNeverChanges() {
        let promise = Promise<Int>()
        #expect(promise.reject(TestError.other(1)))
        #expect(!promise.reject(TestError.other(2)))
        #expect(!promise.fulfill(1))
        #expect(!promise.resolve(Promise(value: 3)))
        #expect(!promise.cancel())
        #expect(promise.errorNow as? TestError == .other(1))
    }

    @Test("2.1: settling an already settled promise from init returns false")
    func initSettledNeverChanges() {
        #expect(!Promise(value: 1).fulfill(2))
        #expect(!Promise<Int>(error: TestError.boom).fulfill(2))
    }

    // MARK: 2.2.2 / 2.2.3 Handlers run once, with the value or reason, only after settling

    @Test("2.2.2: then's handler gets the value, runs only after fulfilment, and only once")
    func thenRunsOnceAfterFulfilment() async {
        let calls = Recorder<Int>()
        let promise = Promise<Int>()
        promise.then { calls.append($0) }
        #expect(await holds { calls.count == 0 })
        promise.fulfill(5)
        promise.fulfill(6)
        #expect(await eventually { calls.count == 1 })
        #expect(await holds { calls.values == [5] })
    }

    @Test("2.2.3: recover's handler gets the reason, runs only after rejection, and only once")
    func recoverRunsOnceAfterRejection() async {
        let calls = Recorder<TestError?>()
        let promise = Promise<Int>()
        promise.recover { error -> Int in
            calls.append(error as? TestError)
            return 0
        }
        #expect(await holds { calls.count == 0 })
        promise.reject(TestError.other(1))
        promise.reject(TestError.other(2))
        #expect(await eventually { calls.count == 1 })
        #expect(await holds { calls.values == [.other(1)] })
    }

    @Test("handlers registered before and after settling all run, exactly once each")
    func handlersBeforeAndAfterSettling() async {
        let calls = Recorder<Int>()
        let promise = Promise<Int>()
        for index in 0..<10 { promise.then { _ in calls.append(index) } }
        promise.fulfill(1)
        for index in 10..<20 { promise.then { _ in calls.append(index) } }
        #expect(await eventually { calls.count == 20 })
        #expect(await holds { calls.count == 20 })
        #expect(calls.values.sorted() == Array(0..<20))
    }

    // MARK: 2.2.4 Never synchronously

    @Test("2.2.4: a handler on a non-inline executor never runs inside then or inside fulfill/reject")
    func handlersNeverSynchronous() async {
        let insideCaller = Recorder<Bool>()
        let queue = DispatchQueue(label: "PromisesAPlus.queue")
        let fulfilled = Promise(value: 1)
        let rejected = Promise<Int>(error: TestError.boom)
        CallerStack.run {
            fulfilled.then { _ in insideCaller.append(CallerStack.isInside) }
            fulfilled.then(on: queue) { _ in insideCaller.append(CallerStack.isInside) }
            rejected.recover { _ -> Int in insideCaller.append(CallerStack.isInside); return 0 }
            fulfilled.always { _ in insideCaller.append(CallerStack.isInside) }
        }
        let pending = Promise<Int>()
        let pendingRejected = Promise<Int>()
        pending.then { _ in insideCaller.append(CallerStack.isInside) }
        pending.then(on: queue) { _ in insideCaller.append(CallerStack.isInside) }
        pendingRejected.recover { _ -> Int in insideCaller.append(CallerStack.isInside); return 0 }
        CallerStack.run {
            pending.fulfill(1)
            pendingRejected.reject(TestError.boom)
        }
        #expect(await eventually { insideCaller.count == 7 })
        #expect(insideCaller.values == Array(repeating: false, count: 7))
    }

    // MARK: 2.2.6 Registration order

    @Test("2.2.6.1: then handlers on one serial executor run in registration order")
    func thenRegistrationOrder() async {
        #expect(await registrationOrder(on: DispatchQueue(label: "PromisesAPlus.order")) == Array(0..<50))
    }

    @Test("2.2.6.2: recover handlers on one serial executor run in registration order")
    func recoverRegistrationOrder() async {
        let queue = DispatchQueue(label: "PromisesAPlus.recoverOrder")
        let order = Recorder<Int>()
        let promise = Promise<Int>()
        for index in 0..<50 {
            promise.recover(on: queue) { _ -> Int in order.append(index); return index }
        }
        promise.reject(TestError.boom)
        #expect(await eventually { order.count == 50 })
        #expect(order.values == Array(0..<50))
    }

    @Test("2.2.6: mixed then, recover and always handlers on one serial executor keep registration order")
    func mixedRegistrationOrder() async {
        let queue = DispatchQueue(label: "PromisesAPlus.mixed")
        let order = Recorder<String>()
        let promise = Promise<Int>()
        promise.then(on: queue) { _ in order.append("then1") }
        promise.recover(on: queue) { _ -> Int in order.append("recover"); return 0 }
        promise.always(on: queue) { _ in order.append("always") }
        promise.then(on: queue) { _ in order.append("then2") }
        promise.fulfill(1)
        #expect(await eventually { order.count == 3 })
        #expect(await holds { order.values == ["then1", "always", "then2"] })
    }

    // MARK: 2.2.7 then returns a promise

    @Test("2.2.7.1: a handler's returned value fulfils the child")
    func returnedValueFulfils() async {
        #expect(await Promise(value: 1).then { $0 + 1 }.fulfilledValue() == 2)
        #expect(await Promise<Int>(error: TestError.boom).recover { _ in 9 }.fulfilledValue() == 9)
    }

    @Test("2.2.7.2: a handler's thrown error rejects the child")
    func thrownErrorRejects() async {
        let fromThen = Promise(value: 1).then { (_: Int) -> Int in throw TestError.other(1) }
        let fromRecover = Promise<Int>(error: TestError.boom).recover { (_: any Error) -> Int in throw TestError.other(2) }
        #expect(await fromThen.rejectionError() as? TestError == .other(1))
        #expect(await fromRecover.rejectionError() as? TestError == .other(2))
    }

    @Test("2.2.7.3: a fulfilled promise skips recover handlers and its value reaches the next then")
    func fulfilmentSkipsRecover() async {
        let recovers = Counter()
        let end = Promise(value: 3)
            .recover { _ -> Int in recovers.add(); return 0 }
            .recover { _ -> Int in recovers.add(); return 0 }
            .then { $0 * 2 }
        #expect(await end.fulfilledValue() == 6)
        #expect(recovers.value == 0)
    }

    @Test("2.2.7.4: a rejected promise skips then handlers down to the next recover, which gets the same reason")
    func rejectionSkipsThen() async {
        let thens = Counter()
        let reasons = Recorder<TestError?>()
        let end = Promise<Int>(error: TestError.other(4))
            .then { value -> Int in thens.add(); return value }
            .then { value -> Int in thens.add(); return value }
            .recover { error -> Int in reasons.append(error as? TestError); return 1 }
        #expect(await end.fulfilledValue() == 1)
        #expect(thens.value == 0)
        #expect(reasons.values == [.other(4)])
    }

    // MARK: 2.3 The resolution procedure

    @Test("2.3.2: resolve adopts a pending promise: pending until it fulfils, then its value")
    func resolveAdoptsPendingFulfilment() async {
        let source = Promise<Int>()
        let adopter = Promise<Int>()
        #expect(adopter.resolve(source))
        #expect(await holds { adopter.isPending })
        source.fulfill(7)
        #expect(await adopter.fulfilledValue() == 7)
    }

    @Test("2.3: a promise resolved with a pending promise is locked in: fulfill and reject return false")
    func resolvedPromiseIsLockedIn() async {
        let source = Promise<Int>()
        let adopter = Promise<Int>()
        #expect(adopter.resolve(source))
        #expect(!adopter.fulfill(9))
        #expect(!adopter.reject(TestError.boom))
        #expect(!adopter.resolve(Promise(value: 8)))
        source.fulfill(1)
        #expect(await adopter.fulfilledValue() == 1)
    }

    @Test("2.3.2: resolve adopts a pending promise's later rejection")
    func resolveAdoptsPendingRejection() async {
        let source = Promise<Int>()
        let adopter = Promise<Int>()
        adopter.resolve(source)
        source.reject(TestError.other(7))
        #expect(await adopter.rejectionError() as? TestError == .other(7))
    }

    @Test("2.3.2: resolve adopts an already fulfilled or rejected promise")
    func resolveAdoptsSettled() async {
        let fulfilled = Promise<Int>()
        let rejected = Promise<Int>()
        fulfilled.resolve(Promise(value: 1))
        rejected.resolve(Promise(error: TestError.boom))
        #expect(await fulfilled.fulfilledValue() == 1)
        #expect(await rejected.rejectionError() as? TestError == .boom)
    }

    @Test("2.3.2: adoption through a chain of promises settles every link")
    func resolveChain() async {
        let links = (0..<10).map { _ in Promise<Int>() }
        for (adopter, source) in zip(links, links.dropFirst()) { adopter.resolve(source) }
        links.last!.fulfill(10)
        for link in links {
            #expect(await link.fulfilledValue() == 10)
        }
    }

    @Test("2.3.1: resolve(self) rejects with PromiseError.cycle")
    func resolveSelf() async {
        let promise = Promise<Int>()
        promise.resolve(promise)
        #expect(await promise.rejectionError() as? PromiseError == .cycle)
    }

    @Test("an adoption cycle a←b←a rejects both with PromiseError.cycle")
    func twoPromiseCycle() async {
        let a = Promise<Int>()
        let b = Promise<Int>()
        a.resolve(b)
        b.resolve(a)
        #expect(await a.rejectionError() as? PromiseError == .cycle)
        #expect(await b.rejectionError() as? PromiseError == .cycle)
    }

    @Test("an adoption cycle a←b←c←a rejects all three with PromiseError.cycle")
    func threePromiseCycle() async {
        let a = Promise<Int>()
        let b = Promise<Int>()
        let c = Promise<Int>()
        a.resolve(b)
        b.resolve(c)
        c.resolve(a)
        for promise in [a, b, c] {
            #expect(await promise.rejectionError() as? PromiseError == .cycle)
        }
    }

    @Test("resolving a promise with its own pending then child is a cycle through the chain")
    func resolveWithOwnChild() async {
        let parent = Promise<Int>()
        let child = parent.then { $0 + 1 }
        parent.resolve(child)
        #expect(await parent.rejectionError() as? PromiseError == .cycle)
        #expect(await child.rejectionError() as? PromiseError == .cycle)
    }

    @Test("2.3.1: a handler returning its own result promise rejects it with PromiseError.cycle", arguments: [true, false])
    func handlerReturnsOwnResult(inline: Bool) async {
        let holder = LockedBox<Promise<Int>?>(nil)
        let parent = Promise<Int>()
        let body: @Sendable (Int) -> Promise<Int> = { _ in holder.value ?? Promise(error: TestError.boom) }
        let result: Promise<Int> = inline ? parent.then(on: .inline, body) : parent.then(body)
        holder.value = result
        parent.fulfill(1)
        #expect(await result.rejectionError() as? PromiseError == .cycle)
    }

    @Test("a handler returning a promise chained from its own result promise rejects with PromiseError.cycle", arguments: [true, false])
    func handlerReturnsDescendantOfOwnResult(inline: Bool) async {
        let holder = LockedBox<Promise<Int>?>(nil)
        let parent = Promise<Int>()
        let body: @Sendable (Int) -> Promise<Int> = { _ in
            guard let own = holder.value else { return Promise(error: TestError.boom) }
            return own.then { $0 + 1 }.then { $0 + 1 }
        }
        let result: Promise<Int> = inline ? parent.then(on: .inline, body) : parent.then(body)
        holder.value = result
        parent.fulfill(1)
        #expect(await result.rejectionError() as? PromiseError == .cycle)
    }

    @Test("a recover handler returning its own result promise rejects with PromiseError.cycle")
    func recoverReturnsOwnResult() async {
        let holder = LockedBox<Promise<Int>?>(nil)
        let parent = Promise<Int>()
        let result: Promise<Int> = parent.recover(on: .inline) { _ in holder.value ?? Promise(value: 0) }
        holder.value = result
        parent.reject(TestError.boom)
        #expect(await result.rejectionError() as? PromiseError == .cycle)
    }

    @Test("a handler returning an already settled ancestor is plain adoption, not a cycle")
    func returningSettledAncestor() async {
        let root = Promise(value: 5)
        let child = root.then { $0 + 1 }
        let fromParent: Promise<Int> = root.then { _ in root }
        let fromGrandparent: Promise<Int> = child.then { _ in root }
        #expect(await fromParent.fulfilledValue() == 5)
        #expect(await fromGrandparent.fulfilledValue() == 5)
    }

    @Test("a handler returning a rejected ancestor adopts its rejection, not a cycle")
    func returningRejectedAncestor() async {
        let root = Promise<Int>(error: TestError.other(5))
        let recovered: Promise<Int> = root.recover { _ in root }
        #expect(await recovered.rejectionError() as? TestError == .other(5))
    }
}
