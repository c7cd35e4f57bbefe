import PromiseJSON
import PromiseModel
import PromiseStore

/// What the registry holds for one connection: where its notifications go,
/// and what must be undone when it closes. Loop thread only.
package final class RegistrySession {
    let peer: any RegistryPeer
    /// Holds notifications back until what they tell is stored; nil in memory.
    let journal: GroupCommit?
    /// Ids this connection subscribed to (existing or not yet created), some
    /// perhaps settled since: a settlement ends the subscriptions to it in
    /// the registry's `subscribers` map, which says which are live, and
    /// counts here, without hashing its id once per subscriber (that was a
    /// third of telling 10,000 of them). Ended ids are dropped in bulk once
    /// they outnumber the live ones.
    var subscribedIDs: PromiseIDSet = []
    /// How many of ``subscribedIDs`` have ended since.
    var endedSubscriptions = 0
    /// Live subscriptions, for `maxSubscriptionsPerConnection`.
    var subscriptionCount: Int { subscribedIDs.count - endedSubscriptions }
    /// Its pending `wait` requests.
    var waiters: [ObjectIdentifier: Waiter] = [:]
    /// Pending promises it created with `lease: true`.
    var leases: PromiseIDSet = []

    init(peer: any RegistryPeer, journal: GroupCommit?) {
        self.peer = peer
        self.journal = journal
    }

    /// Sends a notification already serialized, as a line: the same bytes go
    /// to every subscriber, written once per event rather than once per
    /// connection. A peer that is gone or cut off just misses it.
    package func push(line notification: [UInt8]) {
        guard let journal else {
            if peer.isOpen { peer.send(notification) }
            return
        }
        let peer = self.peer
        // Held bytes count towards the peer's output limit (`RegistryPeer.hold(bytes:)`).
        peer.hold(bytes: notification.count)
        journal.deliver { _ in
            peer.release(bytes: notification.count)
            if peer.isOpen { peer.send(notification) }
        }
    }
}

/// A `wait` request not yet answered: for a pending promise, or for an id
/// that does not exist yet. Loop thread only.
final class Waiter {
    let promiseID: String
    let connectionID: UInt64
    /// Takes the promise's record as JSON text, or the error that ends the wait.
    let answer: (Result<[UInt8], RegistryError>) -> Void
    var timer: (any ScheduledTimer)?
    /// Made before any promise had its id, and counted in `Registry.uncreatedWatches` until one has.
    var awaitsCreation = false

    init(promiseID: String, connectionID: UInt64, answer: @escaping (Result<[UInt8], RegistryError>) -> Void) {
        self.promiseID = promiseID
        self.connectionID = connectionID
        self.answer = answer
    }
}

/// Waits and subscriptions for ids that no promise has yet, over all
/// connections, against `DaemonLimits.maxWaitersForUncreatedIDs` and
/// `maxSubscriptionsToUncreatedIDs`. Ids of existing promises are bounded
/// by `maxPromises`; these are not, and each costs its id's bytes: 100,000
/// subscriptions of 256-byte ids take about 49 MB, on every connection.
struct UncreatedWatches {
    var waiters = 0
    var subscriptions = 0

    var isEmpty: Bool { waiters == 0 && subscriptions == 0 }
}

/// A registry method call: who makes it, and where an answer that cannot be
/// given at once goes.
package struct RegistryCall {
    package let connectionID: UInt64
    /// Takes the answer that comes later; nil for a notification, which
    /// gets no answer.
    package let later: (any LaterAnswers)?

    package init(connectionID: UInt64, later: (any LaterAnswers)?) {
        self.connectionID = connectionID
        self.later = later
    }

    /// Whether the caller reads an answer (it is not a notification).
    var expectsAnswer: Bool { later != nil }

    /// Takes the answer of a method that answers later with a record
    /// (`wait`), as JSON text; nil for a notification. Made on demand: only
    /// `wait` needs it, and making it for every request would cost an allocation each.
    var answerLater: ((Result<[UInt8], RegistryError>) -> Void)? {
        guard let later else { return nil }
        return { later.answer(record: $0) }
    }

    /// Takes the answer of `pool.acquire` that comes later; nil for a notification.
    var answerHoldingLater: ((Result<PoolHolding, RegistryError>) -> Void)? {
        guard let later else { return nil }
        return { later.answer(holding: $0) }
    }
}

@available(*, unavailable)
extension RegistrySession: Sendable {}

@available(*, unavailable)
extension Waiter: Sendable {}
