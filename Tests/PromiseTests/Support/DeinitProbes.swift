import Promise

/// A pending child whose parent is held by nothing but the child, and whose handler on that
/// parent captures an object that reads the child in `box` when it is freed: letting go of the
/// parent under the child's lock would then spin for ever on that lock. For the tests that
/// check that a settle or an adoption releases the parent outside the lock.
func childOfDroppedParent(touching box: LockedBox<Promise<Int>?>, _ touched: Counter) -> Promise<Int> {
    let parent = Promise<Int>()
    let toucher = TouchesOnDeinit(box, touched)
    return parent.then { value in withExtendedLifetime(toucher) { value } }
}

/// Reads a promise's state from its deinit, as user values and captures may.
final class TouchesOnDeinit: Sendable {
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
