/// An `onProgress` handler bound to its executor.
@usableFromInline
struct _ProgressObserver: Sendable {
    @usableFromInline let notify: @Sendable (Double) -> Void

    @inlinable
    init(on executor: some Executor, _ body: @escaping @Sendable (Double) -> Void) {
        notify = { fraction in executor.execute { body(fraction) } }
    }
}
