import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry

extension RegistryInfo {
    /// `{"version","protocol","promises","pending","settled","collected",
    /// "connections","runningProcesses","pools","limits","store"}`.
    var json: JSONValue {
        [
            "version": .string(PromiseProtocol.daemonVersion),
            "protocol": .int(PromiseProtocol.version),
            "promises": .int(promises),
            "pending": .int(pending),
            "settled": .int(settled),
            "collected": .int(collected),
            "connections": .int(connections),
            "runningProcesses": .int(runningProcesses),
            "pools": .object(pools.mapValues(\.json)),
            "limits": limits.json,
            "store": storeJSON,
        ]
    }

    /// `{"location":"none","durable":false,"retainMs"}` without a store, else
    /// `{"location","durable":true,"writable","error","commits","changes",
    /// "unstorable","quarantined","retainMs"}`.
    private var storeJSON: JSONValue {
        let retain: JSONValue = retainMilliseconds.map { .int(Int($0)) } ?? .null
        guard let store else { return ["location": "none", "durable": false, "retainMs": retain] }
        return [
            "location": .string(store.location),
            "durable": true,
            "writable": .bool(store.failure == nil),
            "error": store.failure.map { .string($0) } ?? .null,
            "commits": .int(store.commits),
            "changes": .int(store.changes),
            "unstorable": .int(store.unstorable),
            "quarantined": .int(store.quarantined),
            "retainMs": retain,
        ]
    }
}

extension PoolUse {
    /// `{"limit","running","queued","holders":[holder…],"waiting":[holder…]}`.
    var json: JSONValue {
        ["limit": .int(limit), "running": .int(running), "queued": .int(queued),
         "holders": .array(holders.map(\.json)), "waiting": .array(waiting.map(\.json))]
    }
}
