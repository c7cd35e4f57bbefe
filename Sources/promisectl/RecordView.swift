import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// What people are shown of one promise record: the fields `list`, `tree`,
/// `get` and `watch` print, read once from the record's JSON. Pure: the
/// clock is a parameter, so that tests give exact output.
struct RecordView: Equatable {
    var id: String
    /// `pending`, `running` (an exec step whose command runs), `queued`
    /// (waiting in a pool), `fulfilled`, `rejected` or `cancelled`.
    var state: String
    var kind: String
    var parent: String?
    var children: [String]
    var inputs: [String]
    var consumers: [String]
    var exec: [String]?
    /// A `then` child's condition: `fulfilled`, `rejected` or `settled`.
    var on: String?
    var pid: Int?
    /// The command's start for exec steps, else the promise's creation (ms since 1970).
    var started: Int64?
    var settled: Int64?
    var exitStatus: Int?
    var progress: Double?
    var progressMessage: String?
    var reasonMessage: String?
    var isSettled: Bool

    init(_ record: BlockingPromiseClient.Record) {
        let json = record.json
        id = record.id
        isSettled = record.state != .pending
        if record.state == .pending, json["queued"]?.boolValue == true {
            state = "queued"
        } else if record.state == .pending, json["pid"]?.intValue != nil {
            state = "running"
        } else {
            state = record.state.rawValue
        }
        kind = json["kind"]?.stringValue ?? "created"
        parent = record.parent
        children = Self.strings(json["children"])
        inputs = Self.strings(json["inputs"])
        consumers = Self.strings(json["consumers"])
        exec = json["exec"]?.arrayValue.map { $0.compactMap(\.stringValue) }
        on = json["on"]?.stringValue
        pid = json["pid"]?.intValue
        started = (json["started"]?.intValue ?? json["created"]?.intValue).map(Int64.init)
        settled = json["settled"]?.intValue.map(Int64.init)
        exitStatus = json["exitStatus"]?.intValue
        progress = json["progress"]?.doubleValue
        progressMessage = json["progressMessage"]?.stringValue
        reasonMessage = record.reasonMessage
    }

    private static func strings(_ value: JSONValue?) -> [String] {
        value?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// How long it ran: until it settled, else until `now`.
    func duration(now: Int64) -> Int64? {
        guard let started else { return nil }
        return max(0, (settled ?? now) - started)
    }

    /// `42%` while pending, and the message if there is one; "" when there
    /// is nothing to say.
    var progressText: String {
        var parts: [String] = []
        if let progress, progress > 0, !isSettled {
            parts.append(Format.percent(progress))
        }
        if let progressMessage, !progressMessage.isEmpty { parts.append(Format.oneLine(progressMessage)) }
        return parts.joined(separator: " ")
    }

    /// Rejected at its own hand rather than by what it follows or joins: a
    /// command that exited non-zero, or a rejection given by a client or a
    /// timeout. A `then` child or a combinator that only passes on an
    /// upstream rejection is not the failing step.
    func isFailingStep(upstreamRejected: Bool) -> Bool {
        guard state == "rejected" else { return false }
        if let exitStatus { return exitStatus != 0 }
        return !upstreamRejected
    }
}
