import PromiseJSON
import PromiseModel
import PromiseRPC

/// The params of each typed request, in one place for the `async` methods
/// of ``PromiseConnection`` and their promise forms on ``PromiseConnection/Calls``.
enum RemoteRequests {
    static func create(_ id: String?, timeout: Duration?, lease: Bool, name: String?) -> [String: JSONValue] {
        var params: [String: JSONValue] = [:]
        if let id { params["id"] = .string(id) }
        if let timeout { params["timeoutMs"] = .int(milliseconds(timeout)) }
        if lease { params["lease"] = true }
        if let name { params["name"] = .string(name) }
        return params
    }

    static func resolve<T: Encodable>(_ id: String, with value: T) throws(PromiseConnectionError) -> [String: JSONValue] {
        ["id": .string(id), "value": try RemoteValueCoding.encode(value, id: id)]
    }

    static func reject(_ id: String, reason: RemoteRejection) -> [String: JSONValue] {
        ["id": .string(id), "reason": reason.json]
    }

    static func id(_ id: String) -> [String: JSONValue] {
        ["id": .string(id)]
    }

    static func progress(_ id: String, _ fraction: Double, message: String?) -> [String: JSONValue] {
        var params: [String: JSONValue] = ["id": .string(id), "progress": .double(fraction)]
        if let message { params["message"] = .string(message) }
        return params
    }

    /// A record answer, typed.
    @Sendable static func record(_ json: JSONValue) throws(PromiseConnectionError) -> PromiseRecord {
        try PromiseRecord(json)
    }

    /// Whole milliseconds, rounded up so that a short timeout is not zero; negative is zero.
    static func milliseconds(_ duration: Duration) -> Int {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let (total, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return Int.max }
        return Int(total) + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
