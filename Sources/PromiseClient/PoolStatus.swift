import PromiseJSON

/// One pool of the daemon (docs/PROTOCOL.md, "Pools"): its limit, the slots
/// held and the turns waiting, with the first holders and waiting turns by name.
///
/// ```swift
/// for pool in try await remote.pools() where pool.queued > 0 {
///     print(pool.name, "\(pool.running)/\(pool.limit)", "waiting:", pool.waiting)
/// }
/// ```
public struct PoolStatus: Sendable, Hashable {
    /// Who holds a slot or waits for one.
    public enum Turn: Sendable, Hashable {
        /// A `then … exec` step, by its id.
        case step(String)
        /// A client connection (`pool.acquire`), with the id it named, if any.
        case client(connection: Int, id: String?)
    }

    public var name: String
    /// Slots: how many may run at once (0 pauses the pool).
    public var limit: Int
    /// Slots held now.
    public var running: Int
    /// Turns waiting for a slot.
    public var queued: Int
    /// The first holders (at most 16); empty in a `pool.set` answer.
    public var holders: [Turn]
    /// The first waiting turns (at most 16), first in line first; empty in a `pool.set` answer.
    public var waiting: [Turn]

    /// Reads one pool of `info`'s `pools`, or a `pool.set` answer (which names the pool itself).
    /// - Throws: ``PromiseConnectionError`` (``PromiseConnectionError/Code/invalidResponse``)
    ///   when a count is missing.
    init(name: String, _ json: JSONValue) throws(PromiseConnectionError) {
        guard let limit = json["limit"]?.intValue, let running = json["running"]?.intValue,
              let queued = json["queued"]?.intValue
        else {
            throw PromiseConnectionError(.invalidResponse, "the daemon described pool \"\(name)\" without its counts: \(json)")
        }
        self.name = name
        self.limit = limit
        self.running = running
        self.queued = queued
        holders = Self.turns(json["holders"])
        waiting = Self.turns(json["waiting"])
    }

    private static func turns(_ json: JSONValue?) -> [Turn] {
        (json?.arrayValue ?? []).compactMap { entry in
            if let step = entry["step"]?.stringValue { return .step(step) }
            if let connection = entry["connection"]?.intValue {
                return .client(connection: connection, id: entry["id"]?.stringValue)
            }
            return nil
        }
    }
}
