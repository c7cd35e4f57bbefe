import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// `wait`, `subscribe` and `unsubscribe`: learning when promises settle.
///
/// All three work by id, so they may come before the `create` of that id:
/// a script can wait for, or subscribe to, a well-known name another script
/// will create later.
extension Registry {
    /// `wait` for promise `id` → the promise once settled (now, if it is);
    /// waitTimedOut when `timeout` milliseconds pass first. Returns nil when
    /// the answer comes later through `call.answerLater`.
    package func wait(id: String, timeout: UInt64?, _ call: RegistryCall) throws(RegistryError) -> RemotePromise? {
        if let entry = entries[id], !entry.isPending { return entry }
        // A notification asks for an answer nobody will read: nothing to wait for.
        guard let answerLater = call.answerLater else { return nil }
        let session = try session(call.connectionID)
        if session.peer.isReserved { throw reserveRefusal("wait", closing: session.peer) }
        guard session.waiters.count < limits.maxWaitersPerConnection else {
            throw .limitExceeded(.waitsOnConnection(limits.maxWaitersPerConnection))
        }
        let awaitsCreation = entries[id] == nil
        if awaitsCreation {
            guard uncreatedWatches.waiters < limits.maxWaitersForUncreatedIDs else {
                throw .limitExceeded(.waitsForUncreatedIDs(limits.maxWaitersForUncreatedIDs))
            }
            uncreatedWatches.waiters += 1
        }
        let waiter = Waiter(promiseID: id, connectionID: call.connectionID, answer: answerLater)
        waiter.awaitsCreation = awaitsCreation
        session.waiters[ObjectIdentifier(waiter)] = waiter
        waiters[id, default: []].append(waiter)
        if let timeout {
            waiter.timer = services.schedule(afterMilliseconds: timeout) { [weak self, weak waiter] in
                guard let self, let waiter else { return }
                self.waiterTimedOut(waiter, after: timeout)
            }
        }
        return nil
    }

    private func waiterTimedOut(_ waiter: Waiter, after timeout: UInt64) {
        guard let session = sessions[waiter.connectionID],
            session.waiters.removeValue(forKey: ObjectIdentifier(waiter)) != nil
        else { return }
        if waiter.awaitsCreation { uncreatedWatches.waiters -= 1 }
        removeWaiter(waiter)
        let id = waiter.promiseID
        waiter.answer(.failure(.waitTimedOut(id: id, timeoutMilliseconds: timeout, record: entries[id].map(record))))
    }

    /// `subscribe` to `ids` → how many distinct ids they are. Each id gets
    /// exactly one `settled` notification: right after this answer when it
    /// has already settled, else when it settles (created later or not), and
    /// `progress` notifications while pending. Subscribing again to an id is a
    /// no-op.
    package func subscribe(ids: [String], _ call: RegistryCall) throws(RegistryError) -> Int {
        let session = try session(call.connectionID)
        if session.peer.isReserved { throw reserveRefusal("subscribe", closing: session.peer) }
        var distinct: [String] = []
        var seen: PromiseIDSet = []
        for id in ids where seen.insert(id).inserted { distinct.append(id) }
        let connectionID = call.connectionID
        let settledNow = distinct.filter { id in
            guard let entry = entries[id] else { return false }
            // Already subscribed: its pending `settled` is on its way from `didSettle`.
            return !entry.isPending && !isSubscribed(connectionID, to: id)
        }
        let added = distinct.count(where: { !isSubscribed(connectionID, to: $0) }) - settledNow.count
        guard session.subscriptionCount + added <= limits.maxSubscriptionsPerConnection else {
            throw .limitExceeded(.subscriptionsOnConnection(limits.maxSubscriptionsPerConnection))
        }
        let uncreated = distinct.count(where: { entries[$0] == nil && !isSubscribed(connectionID, to: $0) })
        guard uncreatedWatches.subscriptions + uncreated <= limits.maxSubscriptionsToUncreatedIDs else {
            throw .limitExceeded(.subscriptionsToUncreatedIDs(limits.maxSubscriptionsToUncreatedIDs))
        }
        uncreatedWatches.subscriptions += uncreated
        let now = Set(settledNow)
        for id in distinct where !now.contains(id) && !isSubscribed(connectionID, to: id) {
            // An ended subscription to the same id comes back to life.
            if !session.subscribedIDs.insert(id).inserted { session.endedSubscriptions -= 1 }
            subscribers[id, default: [:]][connectionID] = session
            if let entry = entries[id] { observeProgress(entry) }
        }
        for id in settledNow {
            guard let entry = entries[id] else { continue }
            events?.send(.settled(entry), afterAnswerTo: session)
        }
        return distinct.count
    }

    /// `unsubscribe` from `ids` → how many of them this connection was
    /// subscribed to.
    package func unsubscribe(ids: [String], _ call: RegistryCall) throws(RegistryError) -> Int {
        let session = try session(call.connectionID)
        var removed = 0
        for id in ids where session.subscribedIDs.remove(id) != nil {
            if isSubscribed(call.connectionID, to: id) {
                if entries[id] == nil { uncreatedWatches.subscriptions -= 1 }
                removeSubscriber(call.connectionID, from: id)
                removed += 1
            } else {
                session.endedSubscriptions -= 1
            }
        }
        return removed
    }

    /// The refusal of a request that would hold the daemon's resources on a
    /// connection let in past `maxConnections` (``RegistryPeer/isReserved``).
    /// On the wire its limit is "maxConnections", as for a refused connection:
    /// to a client both mean "the daemon is full, try later". The connection is
    /// closed once the answer is written (``RegistryPeer/closeAfterAnswer()``):
    /// refused clients that stayed would fill the reserve, and the client
    /// that would release the waiters would be refused too.
    func reserveRefusal(_ method: String, closing peer: any RegistryPeer) -> RegistryError {
        peer.closeAfterAnswer()
        return .reservedConnection(action: method, maxConnections: limits.maxConnections)
    }

    /// Promise `id` was just created: the waits and subscriptions made for it
    /// beforehand no longer count as for an id not created yet.
    func uncreatedWatchesMet(_ id: String) {
        if let waiting = waiters[id] {
            for waiter in waiting where waiter.awaitsCreation {
                waiter.awaitsCreation = false
                uncreatedWatches.waiters -= 1
            }
        }
        // Every subscription to an id without a promise was counted.
        if let subscribed = subscribers[id] { uncreatedWatches.subscriptions -= subscribed.count }
    }

    /// Connection `connectionID` is closing: its waits and subscriptions
    /// for ids not created yet stop counting. Before they are removed.
    func forgetUncreatedWatches(of session: RegistrySession, _ connectionID: UInt64) {
        guard !uncreatedWatches.isEmpty else { return }
        for waiter in session.waiters.values where waiter.awaitsCreation {
            uncreatedWatches.waiters -= 1
        }
        for id in session.subscribedIDs where entries[id] == nil && isSubscribed(connectionID, to: id) {
            uncreatedWatches.subscriptions -= 1
        }
    }

    func session(_ connectionID: UInt64) throws(RegistryError) -> RegistrySession {
        guard let session = sessions[connectionID] else {
            throw .connectionNotOpen(connectionID)
        }
        return session
    }
}
