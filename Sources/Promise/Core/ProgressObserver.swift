/// An `onProgress` handler bound to its executor.
///
/// On a concurrent executor, two reports can run in either order, so each
/// observer remembers the highest value it has handed over and drops a
/// lower one that arrives later: an observer never sees progress go back.
@usableFromInline
struct _ProgressObserver: Sendable {
    @usableFromInline let notify: @Sendable (Double) -> Void

    @inlinable
    init(on executor: some Executor, _ body: @escaping @Sendable (Double) -> Void) {
        let delivered = _Locked<Double>(-1)
        notify = { fraction in
            executor.execute {
                let isNewer = delivered.withLock { last -> Bool in
                    guard fraction > last else { return false }
                    last = fraction
                    return true
                }
                if isNewer { body(fraction) }
            }
        }
    }
}
