import Promise
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseConnection {
    /// Makes local promise `local` known to other processes as `id`.
    ///
    /// Creates `id` leased to this connection, so that the daemon rejects it
    /// if this process dies (or closes the connection) before `local`
    /// settles. When `local` settles, `id` is settled the same way:
    /// fulfilled with its value encoded as JSON, rejected with its error
    /// (a ``RemoteRejection`` as it is, any other error by its description),
    /// cancelled when `local` is. When someone cancels `id` (a script, another
    /// process), `local` is cancelled. Progress reported on `local` is
    /// reported on `id`.
    ///
    /// ```swift
    /// let build = Promise { try await buildLibrary() }
    /// try await remote.publish(build, as: "build/lib")   // scripts can `promisectl wait build/lib`
    /// ```
    /// - Returns: The record of `id` as created: it exists when this returns.
    /// - Throws: ``PromiseConnectionError``: ``PromiseConnectionError/Code/exists``
    ///   when `id` is taken (nothing is then tied to `local`).
    @discardableResult
    public func publish<T: Encodable & Sendable>(_ local: Promise<T>, as id: String, name: String? = nil)
        async throws -> PromiseRecord
    {
        let record = try await create(id, lease: true, name: name)
        tie(local, to: id)
        return record
    }

    /// Ties `local` to the daemon's `id`, created and leased to this connection.
    private func tie<T: Encodable & Sendable>(_ local: Promise<T>, to id: String) {
        let core = core
        let watcherID = core.makeWatcherID()
        core.watch([id], watcher: PublishedWatcher(local), id: watcherID)
        local.onProgress(on: .inline) { fraction in
            core.send("progress", RemoteRequests.progress(id, fraction, message: nil))
        }
        local.onSettled(on: .inline) { result in
            switch result {
            case .success(let value):
                do {
                    core.send("resolve", try RemoteRequests.resolve(id, with: value))
                } catch {
                    core.send("reject", RemoteRequests.reject(id, reason: RemoteRejection(message: "\(error)")))
                }
            case .failure(let error) where error is CancellationError:
                core.send("cancel", RemoteRequests.id(id))
            case .failure(let error):
                core.send("reject", RemoteRequests.reject(id, reason: RemoteRejection(describing: error)))
            }
            core.endWatch(watcherID, ids: [id])
        }
    }
}

/// Cancels a published local promise when its id is cancelled on the daemon.
final class PublishedWatcher<Value: Sendable>: RemoteWatcher {
    let local: Promise<Value>

    init(_ local: Promise<Value>) {
        self.local = local
    }

    func settled(_ record: PromiseRecord) {
        if record.state == .cancelled { local.cancel() }
    }

    func progressed(id: String, fraction: Double, message: String?) {}

    func finished() {}

    func failed(_ error: PromiseConnectionError) {}
}
