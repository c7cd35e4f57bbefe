import Dispatch
import Promise
import PromiseJSON
import PromiseModel
import PromiseRPC
import Synchronization

/// The watcher behind ``PromiseConnection/wait(_:timeout:)``: a
/// subscription that fulfils its promise with the record of `id` once that
/// settles, whichever way.
///
/// It subscribes rather than sending the daemon's `wait`, because the
/// daemon keeps a `wait` until it is answered or the connection closes,
/// while a subscription is withdrawn by `unsubscribe`: cancelling the
/// promise (an awaiting task cancelled) leaves nothing on the daemon. The
/// timeout is kept here for the same reason; when it passes, the record is
/// read once with `get` to answer as the daemon's `-32005` does.
final class RemoteWaiter: RemoteWatcher {
    let promise = Promise<PromiseRecord>()
    private let id: String
    private let core: ConnectionCore
    private let watcherID: Int

    init(id: String, core: ConnectionCore) {
        self.id = id
        self.core = core
        watcherID = core.makeWatcherID()
    }

    /// Timeouts longer than this (about 34 years) start no timer: they never pass.
    static let longestTimeoutMilliseconds = 1 << 40

    /// Subscribes, listens for a local cancel, and starts the timer.
    func start(timeout: Duration?) {
        core.watch([id], watcher: self, id: watcherID)
        promise.onCancel(on: .inline) { [self] in core.endWatch(watcherID, ids: [id]) }
        guard let timeout, promise.isPending else { return }
        let milliseconds = RemoteRequests.milliseconds(timeout)
        guard milliseconds <= Self.longestTimeoutMilliseconds else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
            [weak self] in self?.timedOut(afterMilliseconds: milliseconds)
        }
    }

    /// Stops watching and answers with the record as it is now: settled
    /// meanwhile, it fulfils; still pending (or not created), it rejects
    /// with ``PromiseConnectionError/Code/timedOut`` carrying it.
    private func timedOut(afterMilliseconds milliseconds: Int) {
        guard promise.isPending else { return }
        core.endWatch(watcherID, ids: [id])
        core.call("get", RemoteRequests.id(id)) { [promise, id] result in
            var data: JSONValue = ["id": .string(id)]
            if case .success(let json) = result, let record = try? PromiseRecord(json) {
                guard record.state == .pending else {
                    promise.fulfill(record)
                    return
                }
                data = json
            } else if case .failure(let error) = result, error.code != .noSuchPromise {
                promise.reject(error)
                return
            }
            promise.reject(PromiseConnectionError(
                .timedOut, "promise \"\(id)\" did not settle within \(milliseconds) ms", rpcCode: RPCError.Code.waitTimedOut.rawValue, data: data))
        }
    }

    func settled(_ record: PromiseRecord) {
        promise.fulfill(record)
    }

    func progressed(id: String, fraction: Double, message: String?) {
        promise.reportProgress(fraction)
    }

    func finished() {}

    func failed(_ error: PromiseConnectionError) {
        promise.reject(error)
    }
}
