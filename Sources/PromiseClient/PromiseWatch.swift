/// The events of the promises given to ``PromiseConnection/watch(_:)``, in
/// the order the daemon sends them: progress while pending, then one
/// ``PromiseEvent/settled(_:)`` per id. It ends after the last id settled,
/// and throws a ``PromiseConnectionError`` when the connection is closed or
/// lost first, or the daemon refuses the subscription (past
/// `maxSubscriptionsPerConnection`, an id that is not printable).
///
/// Events are kept from the moment `watch` returns, so none is missed
/// before the iteration starts. Ending the iteration early (a `break`, a
/// cancelled task) stops the watch.
///
/// ```swift
/// for try await event in remote.watch(["build/lib", "build/test"]) {
///     if case .settled(let record) = event { print(record.id, record.state) }
/// }
/// ```
public struct PromiseWatch: AsyncSequence, Sendable {
    public typealias Element = PromiseEvent

    let stream: AsyncThrowingStream<PromiseEvent, any Error>

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<PromiseEvent, any Error>.AsyncIterator

        /// The next event; nil once every id settled.
        /// - Throws: ``PromiseConnectionError``.
        public mutating func next() async throws -> PromiseEvent? {
            try await base.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }
}

/// The watcher behind a ``PromiseWatch``: passes what it is told into the stream.
final class StreamWatcher: RemoteWatcher {
    let continuation: AsyncThrowingStream<PromiseEvent, any Error>.Continuation

    init(_ continuation: AsyncThrowingStream<PromiseEvent, any Error>.Continuation) {
        self.continuation = continuation
    }

    func settled(_ record: PromiseRecord) {
        continuation.yield(.settled(record))
    }

    func progressed(id: String, fraction: Double, message: String?) {
        continuation.yield(.progress(id: id, fraction: fraction, message: message))
    }

    func finished() {
        continuation.finish()
    }

    func failed(_ error: PromiseConnectionError) {
        continuation.finish(throwing: error)
    }
}

extension PromiseConnection {
    /// Watches promises `ids`: their progress, and their settlement, once
    /// each, including ids not created yet and ids settled already (told at once).
    ///
    /// ```swift
    /// for try await event in remote.watch(["build/lib", "build/test"]) {
    ///     print(event)
    /// }
    /// ```
    /// - Returns: A sequence that ends once every id settled.
    public func watch(_ ids: [String]) -> PromiseWatch {
        let (stream, continuation) = AsyncThrowingStream<PromiseEvent, any Error>.makeStream()
        let watcherID = core.makeWatcherID()
        continuation.onTermination = { [core] _ in core.endWatch(watcherID, ids: ids) }
        core.watch(ids, watcher: StreamWatcher(continuation), id: watcherID)
        return PromiseWatch(stream: stream)
    }
}
