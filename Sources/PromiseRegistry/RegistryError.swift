import PromiseJSON

/// Why the registry refuses a request: the promise is missing or settled, an
/// argument is wrong, a limit is reached, or the caller may not do it.
///
/// The registry throws these and nothing else; whoever serves it gives each
/// its code and data (docs/PROTOCOL.md, "Errors"). ``message`` is the text a
/// client reads, whatever carries it.
///
/// ```swift
/// throw RegistryError.noSuchPromise(id: "build")   // message: no promise with id "build"
/// ```
public enum RegistryError: Error, Sendable, Hashable {
    /// No promise has this id.
    case noSuchPromise(id: String)
    /// The promise is settled (`state`); `record` is its record when refused.
    case alreadySettled(id: String, state: String, record: JSONValue)
    /// A promise with the id asked for exists (`state`), and `conflict` says
    /// why it stays.
    case alreadyExists(id: String, state: String, conflict: ExistingPromiseConflict)
    /// The argument `param` is missing or wrong; `reason` says how.
    case invalidArgument(param: String, reason: String)
    /// No pool has this name.
    case noSuchPool(String)
    /// A promise is leased by another connection, `holder`.
    case leasedByAnother(id: String, holder: UInt64)
    /// One more would pass a limit of the daemon.
    case limitExceeded(RegistryLimit)
    /// A connection let in past `maxConnections` asked for something that
    /// would hold the daemon's resources (`action`: "wait", "subscribe", …).
    case reservedConnection(action: String, maxConnections: Int)
    /// A `wait` passed its `timeoutMs`; `record` is the promise's record,
    /// nil when no promise has the id.
    case waitTimedOut(id: String, timeoutMilliseconds: UInt64, record: JSONValue?)
    /// The connection a call names is not open.
    case connectionNotOpen(UInt64)

    /// The text a client reads.
    public var message: String {
        switch self {
        case .noSuchPromise(let id):
            "no promise with id \"\(id)\""
        case .alreadySettled(let id, let state, _):
            "promise \"\(id)\" is already \(state)"
        case .alreadyExists(let id, _, .taken):
            "a promise with id \"\(id)\" already exists"
        case .alreadyExists(let id, _, .pending):
            "a promise with id \"\(id)\" is pending: replace forgets only a settled one"
        case .alreadyExists(let id, _, .needed):
            "a promise with id \"\(id)\" is needed by a pending promise (a then child or a combinator): not replaced"
        case .invalidArgument(_, let reason):
            reason
        case .noSuchPool(let name):
            "no pool named \"\(name)\": start promised with --pool \(name)=N, or make it with pool.set"
        case .leasedByAnother(let id, _):
            "promise \"\(id)\" is leased by another connection"
        case .limitExceeded(let limit):
            limit.message
        case .reservedConnection(let action, let maxConnections):
            "too many connections (limit \(maxConnections)): this one was let in to create, settle "
                + "and read promises only, and cannot \(action)"
        case .waitTimedOut(let id, let timeout, let record):
            "promise \"\(id)\" \(record == nil ? "was not created and settled" : "did not settle") within \(timeout) ms"
        case .connectionNotOpen(let connectionID):
            "connection \(connectionID) is not open"
        }
    }
}

/// Why a promise whose id is asked for again is not replaced.
public enum ExistingPromiseConflict: Sendable, Hashable {
    /// The id is taken, and the request did not ask to replace it.
    case taken
    /// `replace` forgets only a settled promise, and this one is pending.
    case pending
    /// `replace` forgets no promise a pending promise needs.
    case needed
}

/// A limit of the daemon (`DaemonLimits`) a request would pass,
/// with the limit's value.
public enum RegistryLimit: Sendable, Hashable {
    /// `maxPromises`: promises held at once.
    case promises(Int)
    /// `maxWaitersPerConnection`: pending `wait`s on one connection.
    case waitsOnConnection(Int)
    /// `maxWaitersForUncreatedIDs`: pending `wait`s for ids no promise has yet.
    case waitsForUncreatedIDs(Int)
    /// `maxSubscriptionsPerConnection`: subscriptions on one connection.
    case subscriptionsOnConnection(Int)
    /// `maxSubscriptionsPerConnection`, counted for logs followed on one connection.
    case logsFollowedOnConnection(Int)
    /// `maxSubscriptionsToUncreatedIDs`: subscriptions to ids no promise has yet.
    case subscriptionsToUncreatedIDs(Int)
    /// `maxPools`: pools.
    case pools(Int)
    /// `maxQueued`: steps and `pool.acquire` requests waiting for a slot.
    case queued(Int)

    /// The name of the limit, as `DaemonLimits` and `promised --help` spell it.
    public var name: String {
        switch self {
        case .promises: "maxPromises"
        case .waitsOnConnection: "maxWaitersPerConnection"
        case .waitsForUncreatedIDs: "maxWaitersForUncreatedIDs"
        case .subscriptionsOnConnection, .logsFollowedOnConnection: "maxSubscriptionsPerConnection"
        case .subscriptionsToUncreatedIDs: "maxSubscriptionsToUncreatedIDs"
        case .pools: "maxPools"
        case .queued: "maxQueued"
        }
    }

    /// The limit's value.
    public var value: Int {
        switch self {
        case .promises(let value), .waitsOnConnection(let value), .waitsForUncreatedIDs(let value),
            .subscriptionsOnConnection(let value), .logsFollowedOnConnection(let value),
            .subscriptionsToUncreatedIDs(let value), .pools(let value), .queued(let value):
            value
        }
    }

    /// The text a client reads.
    public var message: String {
        switch self {
        case .promises(let value): "too many promises (limit \(value))"
        case .waitsOnConnection(let value): "too many pending waits on this connection (limit \(value))"
        case .waitsForUncreatedIDs(let value): "too many pending waits for ids not created yet (limit \(value))"
        case .subscriptionsOnConnection(let value): "too many subscriptions on this connection (limit \(value))"
        case .logsFollowedOnConnection(let value): "too many logs followed on this connection (limit \(value))"
        case .subscriptionsToUncreatedIDs(let value):
            "too many subscriptions to ids not created yet (limit \(value))"
        case .pools(let value): "too many pools (limit \(value))"
        case .queued(let value):
            "too many steps and pool.acquire requests waiting for a slot (limit \(value))"
        }
    }
}
