import Promise

/// `wait`, `subscribe` and `unsubscribe`: learning when promises settle.
///
/// All three work by id, so they may come before the `create` of that id:
/// a script can wait for, or subscribe to, a well-known name another script
/// will create later.
extension Registry {
    /// `wait`: `id`, `timeoutMs?` → the record once settled (now, if it is);
    /// -32005 when `timeoutMs` passes first. Returns nil when the answer
    /// comes later through `call.answerLater`.
    func wait(_ params: RPCParams, _ call: RegistryCall) throws(RPCError) -> JSONValue? {
        let id = try params.promiseID("id")
        let timeout = try params.milliseconds("timeoutMs")
        if let entry = entries[id], !entry.isPending { return record(entry) }
        // A notification asks for an answer nobody will read: nothing to wait for.
        guard let answerLater = call.answerLater else { return nil }
        let session = try session(call.connectionID)
        guard session.waiters.count < limits.maxWaitersPerConnection else {
            throw RPCError(
                .limitExceeded,
                "too many pending waits on this connection (limit \(limits.maxWaitersPerConnection))",
                data: ["limit": "maxWaitersPerConnection", "value": .int(limits.maxWaitersPerConnection)])
        }
        let waiter = Waiter(promiseID: id, connectionID: call.connectionID, answer: answerLater)
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
        removeWaiter(waiter)
        let id = waiter.promiseID
        let data = entries[id].map(record) ?? ["id": .string(id)]
        let what = entries[id] == nil ? "was not created and settled" : "did not settle"
        waiter.answer(.failure(RPCError(.waitTimedOut, "promise \"\(id)\" \(what) within \(timeout) ms", data: data)))
    }

    /// `subscribe`: `ids` → `{"subscribed":n}` (n distinct ids). Each id gets
    /// exactly one `settled` notification: right after this answer when it
    /// has already settled, else when it settles (created later or not), and
    /// `progress` notifications while pending. Subscribing again to an id is a
    /// no-op.
    func subscribe(_ params: RPCParams, _ call: RegistryCall) throws(RPCError) -> JSONValue {
        let ids = try params.promiseIDs("ids")
        let session = try session(call.connectionID)
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
            throw RPCError(
                .limitExceeded,
                "too many subscriptions on this connection (limit \(limits.maxSubscriptionsPerConnection))",
                data: ["limit": "maxSubscriptionsPerConnection", "value": .int(limits.maxSubscriptionsPerConnection)])
        }
        let now = Set(settledNow)
        for id in distinct where !now.contains(id) && !isSubscribed(connectionID, to: id) {
            // An ended subscription to the same id comes back to life.
            if !session.subscribedIDs.insert(id).inserted { session.endedSubscriptions -= 1 }
            subscribers[id, default: [:]][connectionID] = session
            if let entry = entries[id] { observeProgress(entry) }
        }
        for id in settledNow {
            guard let entry = entries[id] else { continue }
            let notification = settledNotification(entry)
            deferred.append { [weak session] in session?.push(line: notification) }
        }
        return ["subscribed": .int(distinct.count)]
    }

    /// `unsubscribe`: `ids` → `{"unsubscribed":n}`, n being how many of them
    /// this connection was subscribed to.
    func unsubscribe(_ params: RPCParams, _ call: RegistryCall) throws(RPCError) -> JSONValue {
        let ids = try params.promiseIDs("ids")
        let session = try session(call.connectionID)
        var removed = 0
        for id in ids where session.subscribedIDs.remove(id) != nil {
            if isSubscribed(call.connectionID, to: id) {
                removeSubscriber(call.connectionID, from: id)
                removed += 1
            } else {
                session.endedSubscriptions -= 1
            }
        }
        return ["unsubscribed": .int(removed)]
    }

    func session(_ connectionID: UInt64) throws(RPCError) -> RegistrySession {
        guard let session = sessions[connectionID] else {
            throw RPCError(.internalError, "connection \(connectionID) is not open")
        }
        return session
    }
}
