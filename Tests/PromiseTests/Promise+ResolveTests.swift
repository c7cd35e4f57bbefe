import Foundation
import Promise
import Testing

@Suite("Promise.resolve", .timeLimit(.minutes(1)))
struct PromiseResolveTests {
    @Test("resolve releases the promise followed until then outside the lock, so a deinit may touch the resolved promise")
    func resolveReleasesParentOutsideLock() async {
        // Arrange: the child is the only holder of its parent, whose pending
        // handler captures an object that reads the child when it is freed.
        let box = LockedBox<Promise<Int>?>(nil)
        let touched = Counter()
        let child = Self.childOfDroppedParent(touching: box, touched)
        box.value = child

        // Act: adopting releases the parent, its handler and the object.
        let returned = await onNewThread(timeout: .seconds(5)) { child.resolve(Promise(value: 7)) }

        // Assert. A resolve that never returns holds the child's lock for
        // ever: touch the child no more, or the test itself would spin.
        guard let returned else {
            Issue.record("resolve did not return: the deinit spins on the child's lock")
            return
        }
        #expect((try? returned.get()) == true)
        #expect(touched.value == 1)
        #expect(await child.fulfilledValue() == 7)
    }

    @Test("resolving a promise with Promise.all over itself rejects it, and the all, with PromiseError.cycle")
    func resolveWithAllOverItselfIsACycle() async {
        // Arrange.
        let promise = Promise<[Int]>()
        let joined = Promise<Int>.all([promise.then(on: .inline) { $0.count }])

        // Act.
        let accepted = promise.resolve(joined.then(on: .inline) { [$0.count] })

        // Assert.
        #expect(accepted)
        #expect(await promise.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        #expect(await joined.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
    }

    @Test("resolving a promise with Promise.all([a]) directly is a cycle")
    func resolveWithAllOfItselfIsACycle() async {
        let a = Promise<[Int]>()
        let all = Promise<[Int]>.all([a])
        a.resolve(all.then(on: .inline) { $0.flatMap { $0 } })
        #expect(await a.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
    }

    @Test("resolving a promise with a race it takes part in is a cycle, even though another input could settle the race")
    func resolveWithRaceOverItselfIsACycle() async {
        // Arrange.
        let promise = Promise<Int>()
        let other = Promise<Int>()
        let raced = Promise<Int>.race([other, promise.then(on: .inline) { $0 }])

        // Act.
        promise.resolve(raced)

        // Assert.
        #expect(await promise.rejectionError(within: .seconds(5)) as? PromiseError == .cycle)
        other.fulfill(1)
    }

    @Test("resolving with a combinator over other promises is plain adoption")
    func resolveWithUnrelatedCombinatorAdopts() async {
        // Arrange.
        let promise = Promise<[Int]>()
        let first = Promise<Int>()
        let second = Promise<Int>()

        // Act.
        let accepted = promise.resolve(Promise.all([first, second.then(on: .inline) { $0 * 10 }]))
        first.fulfill(1)
        second.fulfill(2)

        // Assert.
        #expect(accepted)
        #expect(await promise.fulfilledValue(within: .seconds(5)) == [1, 20])
    }

    private static func childOfDroppedParent(touching box: LockedBox<Promise<Int>?>, _ touched: Counter) -> Promise<Int> {
        let parent = Promise<Int>()
        let toucher = TouchesOnDeinit(box, touched)
        return parent.then { value in withExtendedLifetime(toucher) { value } }
    }
}

/// Reads a promise's state from its deinit, as user values and captures may.
private final class TouchesOnDeinit: Sendable {
    let box: LockedBox<Promise<Int>?>
    let touched: Counter

    init(_ box: LockedBox<Promise<Int>?>, _ touched: Counter) {
        self.box = box
        self.touched = touched
    }

    deinit {
        _ = box.value?.isPending
        touched.add()
    }
}
