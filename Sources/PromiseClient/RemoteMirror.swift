import Promise
import PromiseRPC
import Synchronization

/// The watcher behind ``PromiseConnection/promise(_:as:cancellingRemote:)``:
/// settles its local promise as the daemon's settles, once.
final class RemoteMirror<Value: Decodable & Sendable>: RemoteWatcher {
    let promise = Promise<Value>()
    /// Set before the daemon's cancellation is passed on, so that the local
    /// cancel it makes is not sent back.
    private let cancelledByRemote = Atomic<Bool>(false)

    init() {}

    var isCancelledByRemote: Bool { cancelledByRemote.load(ordering: .acquiring) }

    func settled(_ record: PromiseRecord) {
        switch record.state {
        case .fulfilled:
            do {
                promise.fulfill(try record.value(as: Value.self))
            } catch {
                promise.reject(error)
            }
        case .rejected:
            promise.reject(record.reason ?? RemoteRejection(message: "rejected"))
        case .cancelled:
            cancelledByRemote.store(true, ordering: .releasing)
            promise.cancel()
        case .pending:
            promise.reject(PromiseConnectionError(
                .invalidResponse, "the daemon told of \"\(record.id)\" as settled, but its record is pending"))
        }
    }

    func progressed(id: String, fraction: Double, message: String?) {
        promise.reportProgress(fraction)
    }

    func finished() {}

    func failed(_ error: PromiseConnectionError) {
        promise.reject(error)
    }
}
