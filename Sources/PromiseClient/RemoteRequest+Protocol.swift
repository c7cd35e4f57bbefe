import PromiseJSON

/// How an `all` settles from its inputs (docs/PROTOCOL.md, "all").
public enum AllPolicy: String, Sendable, Hashable, CaseIterable {
    /// Fulfils with every value once all are fulfilled; rejects as the first input that is rejected.
    case failFast = "fail-fast"
    /// Waits for every input; rejects listing each failure if any failed.
    case allErrors = "all-errors"
    /// Fulfils, once all settled, with the values of the fulfilled inputs only.
    case ignoreErrors = "ignore-errors"
    /// Fulfils, once all settled, with `null` for each rejected input.
    case nulls
}

/// When a `then` child's command runs (docs/PROTOCOL.md, "then and exec").
public enum ThenCondition: String, Sendable, Hashable, CaseIterable {
    case fulfilled, rejected, settled
}

/// One page of `list`: records in creation order, and the cursor of the next page (nil at the end).
public struct PromisePage: Sendable, Hashable {
    public var records: [PromiseRecord]
    public var cursor: String?
}

extension RemoteRequest where Answer == PromiseRecord {
    /// `all`: a new promise that settles from `ids` by `policy`.
    ///
    /// ```swift
    /// let build = try await remote.send(.all(["build/lib", "build/doc"], id: "build"))
    /// ```
    public static func all(_ ids: [String], policy: AllPolicy = .failFast, stopOnFailure: Bool = false, id: String? = nil)
        -> Self
    {
        var params = combinator(ids, id: id)
        if policy != .failFast { params["policy"] = .string(policy.rawValue) }
        if stopOnFailure { params["stopOnFailure"] = true }
        return Self("all", params, decode: RemoteRequests.record)
    }

    /// `any`: fulfils as the first input fulfilled; rejects once every input is rejected.
    public static func any(_ ids: [String], id: String? = nil) -> Self {
        Self("any", combinator(ids, id: id), decode: RemoteRequests.record)
    }

    /// `race`: settles as the first input to settle.
    public static func race(_ ids: [String], id: String? = nil) -> Self {
        Self("race", combinator(ids, id: id), decode: RemoteRequests.record)
    }

    /// `allSettled`: fulfils, once every input settled, with one `{"id","state",…}` per input.
    public static func allSettled(_ ids: [String], id: String? = nil) -> Self {
        Self("allSettled", combinator(ids, id: id), decode: RemoteRequests.record)
    }

    /// `then`: a child of `parent`; with `exec`, a command the daemon runs
    /// when `parent` settles as `on` says (its value on stdin).
    ///
    /// ```swift
    /// let test = try await remote.send(.then("build/lib", childID: "test/lib", exec: ["make", "test"], cwd: "/src"))
    /// ```
    public static func then(
        _ parent: String, childID: String? = nil, on condition: ThenCondition = .fulfilled, exec: [String]? = nil,
        cwd: String? = nil, environment: [String: String]? = nil, pool: String? = nil
    ) -> Self {
        var params: [String: JSONValue] = ["id": .string(parent)]
        if let childID { params["childId"] = .string(childID) }
        if condition != .fulfilled { params["on"] = .string(condition.rawValue) }
        if let exec { params["exec"] = .array(exec.map { .string($0) }) }
        if let cwd { params["cwd"] = .string(cwd) }
        if let environment { params["env"] = .object(environment.mapValues { .string($0) }) }
        if let pool { params["pool"] = .string(pool) }
        return Self("then", params, decode: RemoteRequests.record)
    }

    private static func combinator(_ ids: [String], id: String?) -> [String: JSONValue] {
        var params: [String: JSONValue] = ["ids": .array(ids.map { .string($0) })]
        if let id { params["id"] = .string(id) }
        return params
    }
}

extension RemoteRequest where Answer == PromisePage {
    /// `list`: one page of records, filtered; follow `cursor` for the next.
    ///
    /// ```swift
    /// var page = try await remote.send(.list(prefix: "build/", state: .pending))
    /// while let cursor = page.cursor { page = try await remote.send(.list(prefix: "build/", state: .pending, cursor: cursor)) }
    /// ```
    public static func list(
        prefix: String? = nil, state: PromiseRecord.State? = nil, limit: Int? = nil, cursor: String? = nil
    ) -> Self {
        var params: [String: JSONValue] = [:]
        if let prefix { params["prefix"] = .string(prefix) }
        if let state { params["state"] = .string(state.rawValue) }
        if let limit { params["limit"] = .int(limit) }
        if let cursor { params["cursor"] = .string(cursor) }
        return Self("list", params) { json throws(PromiseConnectionError) in
            guard let records = json["promises"]?.arrayValue else {
                throw PromiseConnectionError(.invalidResponse, "the daemon answered list without promises: \(json)")
            }
            var page = PromisePage(records: [], cursor: json["cursor"]?.stringValue)
            page.records.reserveCapacity(records.count)
            for record in records { page.records.append(try PromiseRecord(record)) }
            return page
        }
    }
}

extension RemoteRequest where Answer == JSONValue {
    /// `forget`: drops settled promises; the answer says which were kept
    /// (`{"forgotten":n,"pending":[…],"needed":[…]}`).
    public static func forget(_ ids: [String]) -> Self {
        Self("forget", ["ids": .array(ids.map { .string($0) })]) { $0 }
    }

    /// `cancelPrefix`: cancels one page of the pending promises under
    /// `prefix` (`{"cancelled":n,"cursor":…}`); call again with the cursor until it is null.
    public static func cancelPrefix(_ prefix: String, cursor: String? = nil) -> Self {
        var params: [String: JSONValue] = ["prefix": .string(prefix)]
        if let cursor { params["cursor"] = .string(cursor) }
        return Self("cancelPrefix", params) { $0 }
    }
}
