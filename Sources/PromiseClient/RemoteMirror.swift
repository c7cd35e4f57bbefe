import Promise
import PromiseModel
import PromiseRPC
import Synchronization

/// The watcher behind ``PromiseConnection/promise(_:as:cancellingRemote:)``:
/// settles its local promise as the daemon's settles, once, and stops
/// watching (or cancels the daemon's too) when the local one is cancelled.
/// It observes its local promise itself (``PromiseSettlementObserver``), so
/// a pending mirror holds no cancel handler of its own.
final class RemoteMirror<Value: Decodable & Sendable>: RemoteWatcher, PromiseSettlementObserver {
    let promise = Promise<Value>()
    private let id: String
    private let core: ConnectionCore
    private let watcherID: Int
    private let cancellingRemote: Bool
    /// Set before the daemon's cancellation is passed on, so that the local
    /// cancel it makes is not sent back.
    private let cancelledByRemote = Atomic<Bool>(false)

    init(id: String, core: ConnectionCore, cancellingRemote: Bool) {
        self.id = id
        self.core = core
        self.cancellingRemote = cancellingRemote
        watcherID = core.makeWatcherID()
    }

    /// Subscribes, then listens for a local cancel.
    func start() {
        core.watch([id], watcher: self, id: watcherID)
        promise.notifySettlement(to: self)
    }

    /// The local promise settled: when cancelled (here or by the daemon),
    /// the mirror stops watching.
    func promiseSettled() {
        guard promise.isCancelled else { return }
        core.endWatch(watcherID, ids: [id])
        if cancellingRemote && !cancelledByRemote.load(ordering: .acquiring) {
            core.send("cancel", RemoteRequests.id(id))
        }
    }

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
