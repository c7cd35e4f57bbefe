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
    /// The watcher id shifted left by two, with the flags below in the two
    /// low bits. One word: with the flags as two `Bool`s of their own, the
    /// object outgrows the allocator's 64-byte block and takes an 80-byte one.
    private let word: Atomic<Int>

    /// Cancelling the mirror cancels the daemon's promise too.
    private static var cancellingRemoteBit: Int { 1 }
    /// Set before the daemon's cancellation is passed on, so that the local
    /// cancel it makes is not sent back.
    private static var cancelledByRemoteBit: Int { 2 }

    init(id: String, core: ConnectionCore, cancellingRemote: Bool) {
        self.id = id
        self.core = core
        word = Atomic(core.makeWatcherID() << 2 | (cancellingRemote ? Self.cancellingRemoteBit : 0))
    }

    private var watcherID: Int {
        word.load(ordering: .relaxed) >> 2
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
        if word.load(ordering: .acquiring) & (Self.cancellingRemoteBit | Self.cancelledByRemoteBit) == Self.cancellingRemoteBit {
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
            word.bitwiseOr(Self.cancelledByRemoteBit, ordering: .releasing)
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
