import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry

/// The results of `cancelPrefix`, `forget`, `log`, `logs` and the pool
/// methods as JSON-RPC answers carry them (docs/PROTOCOL.md, "Methods").
extension CancelPrefixOutcome {
    /// `{"cancelled":n,"cursor":string|null}`.
    var json: JSONValue {
        ["cancelled": .int(cancelled), "cursor": cursor.map { .string(String($0)) } ?? .null]
    }
}

extension ForgetOutcome {
    /// `{"forgotten":n,"pending":[id…],"needed":[id…]}`.
    var json: JSONValue {
        ["forgotten": .int(forgotten), "pending": .array(pending.map(JSONValue.string)),
         "needed": .array(needed.map(JSONValue.string))]
    }
}

extension ForgetPrefixOutcome {
    /// `{"forgotten":n,"keptPending":n,"keptNeeded":n,"cursor":string|null}`.
    var json: JSONValue {
        ["forgotten": .int(forgotten), "keptPending": .int(keptPending), "keptNeeded": .int(keptNeeded),
         "cursor": cursor.map { .string(String($0)) } ?? .null]
    }
}

extension PoolState {
    /// `{"pool","limit","running","queued"}`.
    var json: JSONValue {
        ["pool": .string(pool), "limit": .int(limit), "running": .int(running), "queued": .int(queued)]
    }
}

extension PoolHolding {
    /// `{"pool","held"}`, and `"released"` for `pool.release`.
    var json: JSONValue {
        var members: [String: JSONValue] = ["pool": .string(pool), "held": .int(held)]
        if let released { members["released"] = .bool(released) }
        return .object(members)
    }
}

extension LogTotals {
    /// `{"stdoutBytes","stderrBytes"}`.
    var json: JSONValue {
        ["stdoutBytes": .int(stdoutBytes), "stderrBytes": .int(stderrBytes)]
    }
}

extension LogSnapshot {
    /// `{"id","state","stdout","stderr","stdoutDropped","stderrDropped",
    /// "stdoutBytes","stderrBytes","truncated":{"stdout","stderr"},"limit"}`.
    var json: JSONValue {
        var answer: [String: JSONValue] = ["id": .string(id), "state": .string(state), "limit": .int(limit)]
        var truncated: [String: JSONValue] = [:]
        for stream in StepStream.allCases {
            let part = self[stream]
            answer[stream.rawValue] = .string(part.text)
            answer[stream.rawValue + "Dropped"] = .int(part.dropped)
            answer[stream.rawValue + "Bytes"] = .int(part.total)
            truncated[stream.rawValue] = .bool(part.dropped > 0)
        }
        answer["truncated"] = .object(truncated)
        return .object(answer)
    }
}
