import Foundation
import Promise
import Testing

/// The settles that skip the general hand-out: a promise with no handler and nothing else to
/// hand over (the leaf of every chain), and one with a single `.inline` handler (a link of a
/// chain), settled by the caller or inside its parent's handler run. They must keep what the
/// general path does: the parent is let go after unlocking, and a handler registered from inside
/// the one being run goes behind it.
@Suite("Settle shortcuts", .timeLimit(.minutes(5)))
struct PromiseSettleShortcutTests {
    @Test("fulfilling a child with no handler lets its parent go outside the lock, so a deinit may touch the child")
    func leafReleasesParentOutsideLock() async {
        // Arrange: the child is the only holder of its pending parent, whose
        // handler captures an object that reads the child when it is freed.
        let box = LockedBox<Promise<Int>?>(nil)
        let touched = Counter()
        let child = childOfDroppedParent(touching: box, touched)
        box.value = child

        // Act: settling the child releases the parent, its handler and the object.
        // Assert. A fulfil that never returns holds the child's lock for ever:
        // touch the child no more, or the test itself would spin.
        guard await fulfilReturns(child, 3) else { return }
        #expect(touched.value == 1)
        #expect(child.fulfilledNow == 3)
    }

    @Test("fulfilling a child with one .inline handler lets its parent go outside the lock, so a deinit may touch the child")
    func singleHandlerReleasesParentOutsideLock() async {
        // Arrange: as above, and the child has one handler of its own.
        let box = LockedBox<Promise<Int>?>(nil)
        let touched = Counter()
        let child = childOfDroppedParent(touching: box, touched)
        box.value = child
        let grandchild = child.then(on: .inline) { $0 * 2 }

        // Act, and assert.
        guard await fulfilReturns(child, 4) else { return }
        #expect(touched.value == 1)
        #expect(grandchild.fulfilledNow == 8)
    }

    /// Fulfils `child` with `value` on a thread of its own; whether that returned
    /// (recorded as an issue when it did not, within 5 s) and answered true.
    private func fulfilReturns(_ child: Promise<Int>, _ value: Int) async -> Bool {
        guard let returned = await onNewThread(timeout: .seconds(5), { child.fulfill(value) }) else {
            Issue.record("fulfill did not return: the deinit spins on the child's lock")
            return false
        }
        #expect((try? returned.get()) == true)
        return true
    }

    @Test("a handler registered from inside the only .inline handler of a promise being fulfilled runs after that handler returns")
    func reentrantRegistrationBehindSingleHandler() {
        let promise = Promise<Int>()
        #expect(orderOfReentrantRegistration(on: promise) { promise.fulfill(1) }
                == ["first begins", "first ends", "registered by first"])
    }

    @Test("a handler registered from inside the only .inline handler of a link settled by its parent's handler runs after that handler returns")
    func reentrantRegistrationBehindSingleHandlerOfLink() {
        // `link` is settled inside `root`'s handler run.
        let root = Promise<Int>()
        let link = root.then(on: .inline) { $0 + 1 }
        #expect(orderOfReentrantRegistration(on: link) { root.fulfill(1) }
                == ["first begins", "first ends", "registered by first"])
    }

    /// Gives `promise` one `.inline` handler that registers another, runs
    /// `settle`, and returns what ran in order: the late handler must run
    /// before `settle` returns, but not nested inside the first.
    private func orderOfReentrantRegistration(on promise: Promise<Int>, settle: () -> Void) -> [String] {
        let order = Recorder<String>()
        promise.then(on: .inline) { _ in
            order.append("first begins")
            promise.then(on: .inline) { _ in order.append("registered by first") }
            order.append("first ends")
        }
        settle()
        return order.values
    }

    @Test("a cancel reaching a link with one .inline handler cancels its child without running the handler, also a recover")
    func cancelledLinkSkipsSingleHandler() {
        // Arrange: a cancellation is a rejection, so only the `cancelled`
        // flag keeps `recover` from running on it.
        let ran = Counter()
        let root = Promise<Int>()
        let link = root.then(on: .inline) { $0 + 1 }
        let leaf = link.recover(on: .inline) { _ -> Int in
            ran.add()
            return 0
        }
        let observer = leaf.then(on: .inline) { $0 }

        // Act: the cancel goes down through the shortcut of `link` and `leaf`.
        root.cancel()

        // Assert.
        #expect(link.isCancelled)
        #expect(leaf.isCancelled)
        #expect(observer.isCancelled)
        #expect(ran.value == 0)
    }
}
