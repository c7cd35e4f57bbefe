/// An `onProgress` handler bound to its executor.
///
/// Deliveries to one observer never overlap and only ever increase: reports
/// go to a small mailbox, and one job at a time on the executor hands the
/// newest value to the handler, looping while newer ones arrive. Reports
/// that come in faster than the handler runs are coalesced (the handler
/// sees the newest), and the last one is always delivered. Without this, a
/// concurrent executor could run two deliveries in either order.
@usableFromInline
struct _ProgressObserver: Sendable {
    @usableFromInline let notify: @Sendable (Double) -> Void

    @inlinable
    init(on executor: some Executor, _ body: @escaping @Sendable (Double) -> Void) {
        let mailbox = _ProgressMailbox()
        notify = { fraction in
            if mailbox.post(fraction) {
                executor.execute { mailbox.deliver(to: body) }
            }
        }
    }
}

@usableFromInline
final class _ProgressMailbox: @unchecked Sendable {  // `lock` guards `state`.
    @usableFromInline
    struct State {
        var latest: Double = -1
        var delivered: Double = -1
        var delivering = false
    }

    @usableFromInline let lock = _FutexLock()
    @usableFromInline @exclusivity(unchecked) var state = State()

    @inlinable
    init() {}

    /// Records `fraction`; true when a delivery job must be started.
    @usableFromInline
    func post(_ fraction: Double) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        state.latest = max(state.latest, fraction)
        guard !state.delivering, state.latest > state.delivered else { return false }
        state.delivering = true
        return true
    }

    /// Hands `body` the newest value until none is newer than the last one.
    @usableFromInline
    func deliver(to body: @Sendable (Double) -> Void) {
        while let next = takeNewer() {
            body(next)
        }
    }

    private func takeNewer() -> Double? {
        lock.lock()
        defer { lock.unlock() }
        guard state.latest > state.delivered else {
            state.delivering = false
            return nil
        }
        state.delivered = state.latest
        return state.latest
    }
}
