import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseStore

/// What the registry holds for one connection: where its notifications go,
/// and what must be undone when it closes. Loop thread only.
final class RegistrySession {
    let peer: any RPCPeer
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

    init(peer: any RPCPeer, journal: GroupCommit?) {
        self.peer = peer
        self.journal = journal
    }

    /// Sends a notification already serialized, as a line: the same bytes go
    /// to every subscriber, written once per event rather than once per
    /// connection. A peer that is gone or cut off just misses it.
    func push(line notification: [UInt8]) {
        guard let journal else {
            if peer.isOpen { peer.send(notification) }
            return
        }
        let peer = self.peer
        // Held bytes count towards the peer's output limit (`RPCPeer.hold(bytes:)`).
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
/// subscriptions of 256-byte ids took ~49 MB, on every connection.
struct UncreatedWatches {
    var waiters = 0
    var subscriptions = 0

    var isEmpty: Bool { waiters == 0 && subscriptions == 0 }
}

/// Where the answers to one request go: its connection, or the answer of
/// the batch it came in.
///
/// A protocol rather than a closure: the dispatcher's channels are small
/// structs, held in `any AnswerChannel` without an allocation, where a
/// closure capturing the same things cost two per request (its context,
/// and a box for its weak reference).
protocol AnswerChannel {
    func send(_ message: OutgoingMessage)
    /// Sends the answer to request `id` whose result `writeResult` appends
    /// as JSON text: `send(.recordResult(id:_:))`, unless the channel can
    /// hand the text on without keeping it (see `Dispatcher.ConnectionAnswers`).
    func sendRecordResult(id: JSONValue, _ writeResult: (inout JSONTextBuffer) -> Void)
    /// Bytes an answer may still take here, when the channel bounds them
    /// (a batch member's); nil when it does not.
    var remainingBytes: Int? { get }
}

extension AnswerChannel {
    var remainingBytes: Int? { nil }

    func sendRecordResult(id: JSONValue, _ writeResult: (inout JSONTextBuffer) -> Void) {
        send(.recordResult(id: id, writeResult))
    }
}

/// A registry method call: who makes it, and where an answer that cannot be
/// given at once goes.
struct RegistryCall {
    let connectionID: UInt64
    /// The request's id; nil for a notification, which gets no answer.
    let requestID: JSONValue?
    /// Takes messages for the caller.
    let answers: any AnswerChannel

    /// Takes the answer of a method that answers later with a record
    /// (`wait`), as JSON text; nil for a notification. Made on demand: only
    /// `wait` needs it, and making it for every request cost an allocation each.
    var answerLater: ((Result<[UInt8], RegistryError>) -> Void)? {
        guard let requestID else { return nil }
        let answers = self.answers
        return { outcome in
            switch outcome {
            case .success(let record): answers.send(.recordResult(id: requestID) { $0.append(record) })
            case .failure(let error): answers.send(.json(JSONRPCResponse.error(requestID, RPCError(error))))
            }
        }
    }

    /// Takes the answer of `pool.acquire` that comes later; nil for a notification.
    var answerHoldingLater: ((Result<PoolHolding, RegistryError>) -> Void)? {
        guard let requestID else { return nil }
        let answers = self.answers
        return { outcome in
            answers.send(.json(JSONRPCResponse.answer(requestID, outcome.map(\.json).mapError(RPCError.init))))
        }
    }
}

@available(*, unavailable)
extension RegistrySession: Sendable {}

@available(*, unavailable)
extension Waiter: Sendable {}
