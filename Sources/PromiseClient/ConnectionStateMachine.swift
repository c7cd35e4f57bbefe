import PromiseJSON
import PromiseModel
import PromiseRPC

/// The bookkeeping of one ``PromiseConnection``, without I/O: the requests in
/// flight by id, and which local watchers (mirrors, watch streams) wait on
/// which promise ids. Each event returns what the owner must do (write
/// bytes, answer a caller, tell watchers); the owner does it outside its lock.
///
/// One daemon subscription serves every local watcher of an id: the first
/// watcher of an id sends `subscribe`, the others join it, and the last one
/// to leave sends `unsubscribe`. The daemon ends a subscription by sending
/// `settled`, so the id's watchers are told and forgotten then; a watcher
/// that comes later subscribes anew, and the daemon answers it with the
/// settlement at once (docs/PROTOCOL.md, "subscribe"), so none is missed.
///
/// `Responder` is what answers one request (a continuation, a promise),
/// `Watcher` what is told of settlements: tests use plain values.
///
/// ```swift
/// var machine = ConnectionStateMachine<String, String>()
/// guard case .write(let line) = machine.requestSent("get", ["id": "a"], responder: "caller") else { return }
/// // write `line`; later, when the answer with id 1 comes:
/// machine.answerReceived(id: 1, result: .success(record))   // .respond("caller", .success(record))
/// machine.watchStarted("mirror", id: 1, ids: ["a"])            // .write(a subscribe line)
/// machine.notificationReceived(method: "settled", params: record)  // .settled(…, watchers: ["mirror"], …)
/// ```
struct ConnectionStateMachine<Responder, Watcher> {
    typealias WatcherID = Int

    enum Phase {
        case open
        /// Lost at `since`; `attempt` reconnections tried so far. Requests
        /// and watchers wait for the next connection.
        case reconnecting(since: ContinuousClock.Instant, attempt: Int)
        /// Closed or lost, for good: every later request fails with this error.
        case closed(PromiseConnectionError)
    }

    /// What to do with a request the caller wants sent.
    enum SendAction {
        /// Write these bytes (one line) to the socket.
        case write([UInt8])
        /// Kept for the next connection: nothing to write now.
        case queued
        /// Nothing was sent: fail the caller with this error.
        case fail(PromiseConnectionError)
    }

    /// What to do with an answer that came.
    enum AnswerAction {
        case respond(Responder, Result<JSONValue, PromiseConnectionError>)
        /// A `subscribe` was refused: these watchers end with the error.
        case failWatchers([Watcher], PromiseConnectionError)
        /// The record read after a reconnection shows progress: tell `watchers`.
        case progress(id: String, fraction: Double, message: String?, watchers: [Watcher])
        case none
    }

    /// What to do with a notification that came.
    enum NotificationAction {
        /// Tell `watchers` of the settlement; `finished` have now seen every id they watch.
        case settled(PromiseRecord, watchers: [Watcher], finished: [Watcher])
        case progress(id: String, fraction: Double, message: String?, watchers: [Watcher])
        /// A `settled` that cannot be read: these watchers end with the error.
        case failWatchers([Watcher], PromiseConnectionError)
        case none
    }

    /// What to do once a watcher has been added.
    enum WatchAction {
        /// Send this `subscribe` line.
        case write([UInt8])
        /// Its ids are subscribed to already, or will be on the next connection.
        case none
        /// It watches no id: it is done at once.
        case finished
        /// The connection is gone: end the watcher with this error.
        case fail(PromiseConnectionError)
    }

    /// What to do when the connection is lost or closed: fail these callers
    /// and watchers with `error`, then, with `reconnectAfter`, try to
    /// connect again after that long (``reconnected()`` or
    /// ``reconnectFailed(at:)`` says how it went).
    struct EndAction {
        var responders: [Responder]
        var watchers: [Watcher]
        var error: PromiseConnectionError
        var reconnectAfter: Duration?
    }

    private enum Request {
        /// `line` is kept for a request that is sent again on the next
        /// connection: one safe to send twice, or one not sent yet.
        case call(Responder, line: [UInt8]?, retryable: Bool, takesLease: Bool)
        case subscribe
        case unsubscribe
        case lease(String)
        /// A `get` after a reconnection, for progress reported while the connection was down.
        case progressCheck(String)
    }

    /// One local watcher of an id, as its interest holds it.
    private struct Subscriber {
        var id: WatcherID
        var watcher: Watcher
    }

    /// The first local watcher of one id, and the `subscribe` request that subscribed it.
    ///
    /// A watcher of one id (a mirror, a wait: nearly all of them) lives here
    /// alone, in the one table entry of its id; a watcher of several ids is
    /// also in ``multiWatches``. The watchers that join an id watched
    /// already are in ``laterWatchers``: kept out of this entry, which every
    /// watched id has, they cost nothing to the ids watched once.
    private struct Interest {
        var first: Subscriber
        var subscribeRequest: Int
    }

    /// A watcher of more than one id: its ids, and how many of them it has not seen settle.
    private struct MultiWatch {
        var ids: [String]
        var remaining: Int
    }

    private(set) var phase: Phase = .open
    /// When and for how long to reconnect.
    let policy: ReconnectPolicy
    /// Ids whose lease this connection took (`create` with `lease`): taken
    /// back on each new connection until they settle.
    private(set) var leases: Set<String> = []
    private var nextRequestID = 1
    private var requests: [Int: Request] = [:]
    private var interests: [String: Interest] = [:]
    /// The watchers of an id after its first (``Interest/first``), in the
    /// order they came; no entry for an id watched once.
    private var laterWatchers: [String: [Subscriber]] = [:]
    private var multiWatches: [WatcherID: MultiWatch] = [:]
    /// What the daemon said, with a null id, before it closed: why it refused us.
    private var refusal: PromiseConnectionError?

    init(policy: ReconnectPolicy = .never) {
        self.policy = policy
    }

    /// Ids a `subscribe` names at most, so that a line stays well under the daemon's `maxLineBytes`.
    static var subscribeChunk: Int { 1000 }

    /// How many requests await an answer.
    var requestsInFlight: Int { requests.count }
    /// How many ids the daemon is asked to tell of.
    var subscribedIDs: Int { interests.count }
    /// How many watchers wait (counted by a walk over every interest: for tests).
    var watcherCount: Int {
        var single = 0
        for interest in interests.values where multiWatches[interest.first.id] == nil { single += 1 }
        for later in laterWatchers.values {
            for subscriber in later where multiWatches[subscriber.id] == nil { single += 1 }
        }
        return single + multiWatches.count
    }

    // MARK: Requests

    /// The caller wants `method` sent with `params`; `responder` gets the answer.
    ///
    /// - Parameters:
    ///   - retryable: Safe to send twice (a read, an idempotent write): sent
    ///     again on the next connection when the answer was lost with this one.
    ///     Others then fail with ``PromiseConnectionError/Code/connectionLost``:
    ///     they may have been applied.
    ///   - takesLease: The request takes the lease of the promise its answer is the record of.
    mutating func requestSent(
        _ method: String, _ params: [String: JSONValue], responder: Responder, retryable: Bool = false, takesLease: Bool = false
    ) -> SendAction {
        let id: Int
        switch phase {
        case .closed(let error):
            return .fail(error)
        case .reconnecting:
            id = takeRequestID()
            requests[id] = .call(responder, line: Self.line(id: id, method: method, params: params), retryable: retryable, takesLease: takesLease)
            return .queued
        case .open:
            id = takeRequestID()
            let line = Self.line(id: id, method: method, params: params)
            requests[id] = .call(responder, line: retryable ? line : nil, retryable: retryable, takesLease: takesLease)
            return .write(line)
        }
    }

    /// An answer came, with the `id` of its request.
    mutating func answerReceived(id: JSONValue, result: Result<JSONValue, RPCError>) -> AnswerAction {
        guard case .int(let number) = id, let request = requests.removeValue(forKey: number) else {
            if id == .null, case .failure(let error) = result {
                // A refusal (too many connections, a line too long): the daemon closes next.
                refusal = PromiseConnectionError(error)
            }
            return .none
        }
        switch request {
        case .call(let responder, _, _, let takesLease):
            if case .success(let answer) = result {
                if takesLease, let id = answer["id"]?.stringValue { leases.insert(id) }
                if !leases.isEmpty, let settled = answer["id"]?.stringValue, answer["state"] != "pending" {
                    leases.remove(settled)
                }
            }
            return .respond(responder, result.mapError { PromiseConnectionError($0) })
        case .lease(let id):
            // Settled, or forgotten meanwhile: nothing left to hold.
            if case .failure = result { leases.remove(id) }
            return .none
        case .progressCheck(let id):
            guard case .success(let record) = result, record["state"] == "pending",
                  let fraction = record["progress"]?.doubleValue, fraction > 0,
                  let interest = interests[id]
            else { return .none }
            return .progress(id: id, fraction: fraction, message: record["progressMessage"]?.stringValue,
                             watchers: watchers(of: id, interest).map(\.watcher))
        case .unsubscribe:
            return .none
        case .subscribe:
            guard case .failure(let error) = result else { return .none }
            return .failWatchers(failSubscription(number), PromiseConnectionError(error))
        }
    }

    // MARK: Notifications

    /// The daemon pushed `method` with `params`.
    mutating func notificationReceived(method: String, params: JSONValue) -> NotificationAction {
        guard let id = params["id"]?.stringValue, let interest = interests[id] else { return .none }
        switch method {
        case "settled":
            let subscribers = watchers(of: id, interest)
            interests[id] = nil
            laterWatchers[id] = nil
            leases.remove(id)
            var told: [Watcher] = []
            var finished: [Watcher] = []
            told.reserveCapacity(subscribers.count)
            for subscriber in subscribers {
                told.append(subscriber.watcher)
                if let multi = multiWatches[subscriber.id], multi.remaining > 1 {
                    multiWatches[subscriber.id]!.remaining -= 1
                } else {
                    multiWatches[subscriber.id] = nil
                    finished.append(subscriber.watcher)
                }
            }
            do {
                return .settled(try PromiseRecord(params), watchers: told, finished: finished)
            } catch {
                for subscriber in subscribers { removeWatcher(subscriber.id, ids: []) }
                return .failWatchers(told, error)
            }
        case "progress":
            guard let fraction = params["progress"]?.doubleValue else { return .none }
            return .progress(id: id, fraction: fraction, message: params["message"]?.stringValue,
                             watchers: watchers(of: id, interest).map(\.watcher))
        default:
            return .none
        }
    }

    // MARK: Watchers

    /// `watcher`, known by `watcherID` (unique, chosen by the owner), wants to
    /// be told when each of `ids` settles, and of their progress meanwhile.
    mutating func watchStarted(_ watcher: Watcher, id watcherID: WatcherID, ids: [String]) -> WatchAction {
        if case .closed(let error) = phase { return .fail(error) }
        var unique: [String] = []
        if ids.count == 1 {
            unique = ids
        } else {
            var seen = Set<String>()
            for id in ids where seen.insert(id).inserted { unique.append(id) }
        }
        guard !unique.isEmpty else { return .finished }
        if unique.count > 1 {
            precondition(multiWatches[watcherID] == nil, "watcher \(watcherID) is watching already")
            multiWatches[watcherID] = MultiWatch(ids: unique, remaining: unique.count)
        }

        let subscriber = Subscriber(id: watcherID, watcher: watcher)
        var toSubscribe: [JSONValue] = []
        var requestID = 0
        for id in unique {
            if interests[id] != nil {
                laterWatchers[id, default: []].append(subscriber)
            } else {
                if requestID == 0 { requestID = takeRequestID() }
                interests[id] = Interest(first: subscriber, subscribeRequest: requestID)
                toSubscribe.append(.string(id))
            }
        }
        guard requestID != 0 else { return .none }
        guard case .open = phase else {
            // Subscribed with every other id on the next connection.
            for id in toSubscribe { interests[id.stringValue!]?.subscribeRequest = 0 }
            return .none
        }
        requests[requestID] = .subscribe
        return .write(Self.line(id: requestID, method: "subscribe", params: ["ids": .array(toSubscribe)]))
    }

    /// The watcher gave up (a mirror cancelled, a watch stream ended); ids
    /// no other watcher waits on are unsubscribed. A watcher that ended
    /// already, or was told of every id, changes nothing.
    /// - Parameter ids: The ids it was started with.
    /// - Returns: the `unsubscribe` line to write, if any.
    mutating func watchEnded(_ watcherID: WatcherID, ids: [String]) -> [UInt8]? {
        if case .closed = phase { return nil }
        let released = removeWatcher(watcherID, ids: ids)
        // While reconnecting, what no one watches is not subscribed again.
        guard !released.isEmpty, case .open = phase else { return nil }
        let requestID = takeRequestID()
        requests[requestID] = .unsubscribe
        return Self.line(id: requestID, method: "unsubscribe", params: ["ids": .array(released)])
    }

    // MARK: The end, and reconnecting

    /// The connection broke (end of input, a failed write or read) at `now`.
    ///
    /// With a policy that reconnects, requests safe to send again and every
    /// watcher wait for the next connection; the other requests in flight
    /// fail (they may have been applied). Else everything fails.
    mutating func connectionLost(_ error: PromiseConnectionError, at now: ContinuousClock.Instant) -> EndAction {
        guard case .open = phase else { return EndAction(responders: [], watchers: [], error: error) }
        let error = refusal ?? error
        // A refusal is the daemon's answer to this client: connecting again would be refused again.
        guard policy.reconnects, refusal == nil else { return end(with: error) }
        phase = .reconnecting(since: now, attempt: 0)
        var failed: [Responder] = []
        for (id, request) in requests {
            switch request {
            case .call(let responder, _, let retryable, _):
                if !retryable {
                    failed.append(responder)
                    requests[id] = nil
                }
            case .subscribe, .unsubscribe, .lease, .progressCheck:
                requests[id] = nil
            }
        }
        for id in interests.keys { interests[id]!.subscribeRequest = 0 }
        let lost = PromiseConnectionError(
            .connectionLost, "the connection to the daemon was lost before the answer came; the request may have been applied")
        return EndAction(responders: failed, watchers: [], error: lost, reconnectAfter: policy.delay(beforeAttempt: 0))
    }

    /// An attempt to connect again failed at `now`: try again later, or give up.
    mutating func reconnectFailed(at now: ContinuousClock.Instant, _ error: PromiseConnectionError) -> EndAction {
        guard case .reconnecting(let since, let attempt) = phase else {
            return EndAction(responders: [], watchers: [], error: error)
        }
        if let giveUpAfter = policy.giveUpAfter, since.duration(to: now) >= giveUpAfter {
            return end(with: PromiseConnectionError(
                .connectionLost, "lost the daemon and could not connect again within \(giveUpAfter): \(error.message)"))
        }
        phase = .reconnecting(since: since, attempt: attempt + 1)
        return EndAction(responders: [], watchers: [], error: error, reconnectAfter: policy.delay(beforeAttempt: attempt + 1))
    }

    /// Connected again: the lines to write first, in order — take the leases
    /// back, subscribe to every watched id again (a settlement made meanwhile
    /// is told at once), read each watched id's record (`get`: progress
    /// reported meanwhile is told once, from it), then the requests kept for
    /// this connection.
    mutating func reconnected() -> [UInt8] {
        guard case .reconnecting = phase else { return [] }
        phase = .open
        var bytes: [UInt8] = []
        for id in leases.sorted() {
            let requestID = takeRequestID()
            requests[requestID] = .lease(id)
            bytes += Self.line(id: requestID, method: "lease", params: ["id": .string(id)])
        }
        var pending = Array(interests.keys)
        pending.sort()
        var start = 0
        while start < pending.count {
            let chunk = pending[start..<min(start + Self.subscribeChunk, pending.count)]
            let requestID = takeRequestID()
            requests[requestID] = .subscribe
            for id in chunk { interests[id]!.subscribeRequest = requestID }
            bytes += Self.line(id: requestID, method: "subscribe", params: ["ids": .array(chunk.map { .string($0) })])
            start += Self.subscribeChunk
        }
        // After the subscribes: no progress notification that comes before a record is newer than it.
        for id in pending {
            let requestID = takeRequestID()
            requests[requestID] = .progressCheck(id)
            bytes += Self.line(id: requestID, method: "get", params: ["id": .string(id)])
        }
        for id in requests.keys.sorted() {
            guard case .call(let responder, let line?, let retryable, let takesLease) = requests[id]! else { continue }
            bytes += line
            if !retryable { requests[id] = .call(responder, line: nil, retryable: false, takesLease: takesLease) }
        }
        return bytes
    }

    /// The owner closes the connection.
    mutating func closeRequested() -> EndAction {
        end(with: PromiseConnectionError(.closed, "the connection to the daemon was closed"))
    }

    // MARK: Internals

    private mutating func end(with error: PromiseConnectionError) -> EndAction {
        if case .closed = phase { return EndAction(responders: [], watchers: [], error: error) }
        phase = .closed(error)
        var responders: [Responder] = []
        for request in requests.values {
            if case .call(let responder, _, _, _) = request { responders.append(responder) }
        }
        var ended: [Watcher] = []
        var endedMulti = Set<WatcherID>()
        for (id, interest) in interests {
            for subscriber in watchers(of: id, interest)
            where multiWatches[subscriber.id] == nil || endedMulti.insert(subscriber.id).inserted {
                ended.append(subscriber.watcher)
            }
        }
        requests = [:]
        interests = [:]
        laterWatchers = [:]
        multiWatches = [:]
        leases = []
        return EndAction(responders: responders, watchers: ended, error: error)
    }

    private mutating func takeRequestID() -> Int {
        defer { nextRequestID += 1 }
        return nextRequestID
    }

    /// Removes the watchers of the ids that `subscribe` request `requestID`
    /// subscribed; the daemon subscribed none of them.
    private mutating func failSubscription(_ requestID: Int) -> [Watcher] {
        var failed: [Subscriber] = []
        for (id, interest) in interests where interest.subscribeRequest == requestID {
            failed.append(contentsOf: watchers(of: id, interest))
            interests[id] = nil
            laterWatchers[id] = nil
        }
        var ended: [Watcher] = []
        var seen = Set<WatcherID>()
        for subscriber in failed where seen.insert(subscriber.id).inserted {
            ended.append(subscriber.watcher)
            removeWatcher(subscriber.id, ids: [])
        }
        // Ids of these watchers subscribed by other requests stay subscribed
        // until they settle: an unsubscribe here could race a new watcher.
        return ended
    }

    /// Drops a watcher and the interests only it held: from the ids of its
    /// ``MultiWatch`` if it has one, else from `ids`.
    /// - Returns: the ids no watcher waits on any more.
    @discardableResult
    private mutating func removeWatcher(_ watcherID: WatcherID, ids: [String]) -> [JSONValue] {
        let ids = multiWatches.removeValue(forKey: watcherID)?.ids ?? ids
        var released: [JSONValue] = []
        for id in ids {
            guard let interest = interests[id] else { continue }
            if interest.first.id == watcherID {
                if var later = laterWatchers.removeValue(forKey: id) {
                    interests[id]!.first = later.removeFirst()
                    if !later.isEmpty { laterWatchers[id] = later }
                } else {
                    interests[id] = nil
                    released.append(.string(id))
                }
            } else if var later = laterWatchers.removeValue(forKey: id) {
                later.removeAll { $0.id == watcherID }
                if !later.isEmpty { laterWatchers[id] = later }
            }
        }
        return released
    }

    /// Every watcher of `id`, whose table entry is `interest`, in the order they came.
    private func watchers(of id: String, _ interest: Interest) -> InlineFirstList<Subscriber> {
        InlineFirstList(first: interest.first, rest: laterWatchers.isEmpty ? [] : laterWatchers[id] ?? [])
    }

    /// One request line: `{"id":…,"jsonrpc":"2.0","method":…,"params":…}` and "\n".
    static func line(id: Int, method: String, params: [String: JSONValue]) -> [UInt8] {
        JSONValue.object(["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": .object(params)])
            .serializedLine()
    }
}

extension ConnectionStateMachine.SendAction: Sendable {}
extension ConnectionStateMachine.WatchAction: Sendable {}
extension ConnectionStateMachine.AnswerAction: Sendable where Responder: Sendable, Watcher: Sendable {}
extension ConnectionStateMachine.NotificationAction: Sendable where Watcher: Sendable {}
extension ConnectionStateMachine.EndAction: Sendable where Responder: Sendable, Watcher: Sendable {}
