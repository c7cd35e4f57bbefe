import PromiseJSON

/// The notifications of some promises, across restarts of the daemon:
/// every settlement once, none lost, none twice.
///
/// A subscription ends with its connection. After a reconnection the ids
/// whose settlement was not yet delivered are subscribed to again, and the
/// daemon answers a subscription to a promise already settled with its
/// `settled` notification at once: what settled while the client was away
/// arrives then. A settlement already delivered is never delivered again
/// (the ids delivered are kept, and not subscribed to again). `progress`
/// notifications sent while the client was away are not repeated: progress
/// is a level, and the next one, or the settlement, says where it is.
///
/// ```swift
/// let subscription = try client.subscribe(["job/1", "job/2"])
/// while !subscription.allSettled, let notification = try subscription.next(timeout: nil) {
///     print(notification.json)
/// }
/// ```
public final class ReconnectingSubscription {
    private let client: ReconnectingPromiseClient
    /// The ids subscribed to, in the order given, without repeats.
    public let ids: [String]
    /// Ids whose settlement has been delivered.
    public private(set) var settledIDs: Set<String> = []

    init(client: ReconnectingPromiseClient, ids: [String]) {
        self.client = client
        var seen = Set<String>()
        self.ids = ids.filter { seen.insert($0).inserted }
    }

    /// True once every id's settlement has been delivered.
    public var allSettled: Bool { settledIDs.count == ids.count }

    /// Subscribes on the connection in use to the ids not settled yet.
    func start() throws {
        try client.withReconnects { try subscribe(on: $0) }
    }

    private func subscribe(on connection: BlockingPromiseClient) throws {
        let open = ids.filter { !settledIDs.contains($0) }
        guard !open.isEmpty else { return }
        try connection.call("subscribe", ["ids": .array(open.map(JSONValue.string))])
    }

    /// The next notification, waiting at most `timeout` (nil: forever); nil
    /// when none came in time. A lost connection is reconnected (and the
    /// open ids subscribed to again) within the call.
    ///
    /// - Throws: ``PromiseClientError`` when reconnecting gave up, or the
    ///   daemon sent something that is not JSON-RPC.
    public func next(timeout: Duration?) throws -> BlockingPromiseClient.Notification? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            let left = deadline.map { max(.zero, $0 - .now) }
            let notification: BlockingPromiseClient.Notification?
            do {
                notification = try client.client.nextNotification(timeout: left)
            } catch where ReconnectingPromiseClient.isConnectionLoss(error) && client.policy.reconnects {
                client.markDisconnected(error)
                try client.reconnect()
                try client.withReconnects { try subscribe(on: $0) }
                continue
            }
            guard let notification else { return nil }
            if notification.method == "settled", let id = notification.params["id"]?.stringValue,
               notification.params["state"]?.stringValue != "pending"
            {
                // Already delivered before a reconnection: the daemon tells a new subscriber again.
                guard settledIDs.insert(id).inserted else { continue }
            }
            return notification
        }
    }
}

@available(*, unavailable, message: "a ReconnectingSubscription belongs to one thread at a time")
extension ReconnectingSubscription: Sendable {}
