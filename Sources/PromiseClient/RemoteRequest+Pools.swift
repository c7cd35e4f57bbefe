import PromiseJSON

extension RemoteRequest where Answer == [PoolStatus] {
    /// Every pool, by name (`info`'s `pools`).
    ///
    /// ```swift
    /// let pools = try await remote.send(.pools)
    /// ```
    public static var pools: Self {
        Self("info", [:]) { json throws(PromiseConnectionError) in
            guard let pools = json["pools"]?.objectValue else {
                throw PromiseConnectionError(.invalidResponse, "the daemon answered info without pools: \(json)")
            }
            var statuses: [PoolStatus] = []
            statuses.reserveCapacity(pools.count)
            for (name, pool) in pools { statuses.append(try PoolStatus(name: name, pool)) }
            statuses.sort { $0.name < $1.name }
            return statuses
        }
    }
}

extension RemoteRequest where Answer == PoolStatus {
    /// `pool.set`: makes pool `name` if needed and sets its limit (0…65536;
    /// 0 pauses it). The limit is stored before the answer comes.
    ///
    /// ```swift
    /// let cc = try await remote.send(.setPool("cc", limit: 4))
    /// ```
    public static func setPool(_ name: String, limit: Int) -> Self {
        Self("pool.set", ["pool": .string(name), "limit": .int(limit)]) { json throws(PromiseConnectionError) in
            try PoolStatus(name: json["pool"]?.stringValue ?? name, json)
        }
    }
}

extension RemoteRequest where Answer == PromiseLog {
    /// `logs`: what the daemon kept of step `id`'s output.
    ///
    /// ```swift
    /// let log = try await remote.send(.logs("test/lib"))
    /// ```
    public static func logs(_ id: String) -> Self {
        Self("logs", ["id": .string(id)]) { json throws(PromiseConnectionError) in try PromiseLog(json) }
    }
}
