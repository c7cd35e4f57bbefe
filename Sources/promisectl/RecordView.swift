import Foundation
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

    init(_ record: PromiseClient.Record) {
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
            parts.append("\(Int((progress * 100).rounded(.down)))%")
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

/// Short forms of times and text for one-line output.
enum Format {
    /// `850ms`, `4.2s`, `3m05s`, `2h07m`, `3d04h`.
    static func duration(milliseconds: Int64) -> String {
        let ms = max(0, milliseconds)
        if ms < 1_000 { return "\(ms)ms" }
        if ms < 60_000 {
            let tenths = ms / 100
            return "\(tenths / 10).\(tenths % 10)s"
        }
        let seconds = ms / 1_000
        if seconds < 3_600 { return "\(seconds / 60)m" + twoDigits(seconds % 60) + "s" }
        if seconds < 86_400 { return "\(seconds / 3_600)h" + twoDigits(seconds / 60 % 60) + "m" }
        return "\(seconds / 86_400)d" + twoDigits(seconds / 3_600 % 24) + "h"
    }

    /// Local wall-clock time `HH:MM:SS` of a time in ms since 1970; the date
    /// too (`YYYY-MM-DD HH:MM:SS`) when it is not the day of `now`.
    static func clock(milliseconds: Int64, now: Int64, timeZone: TimeZone = .current) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let time = twoDigits(Int64(parts.hour ?? 0)) + ":" + twoDigits(Int64(parts.minute ?? 0)) + ":"
            + twoDigits(Int64(parts.second ?? 0))
        if calendar.isDate(date, inSameDayAs: Date(timeIntervalSince1970: Double(now) / 1000)) { return time }
        return "\(parts.year ?? 0)-" + twoDigits(Int64(parts.month ?? 0)) + "-" + twoDigits(Int64(parts.day ?? 0)) + " " + time
    }

    /// An argv as a shell would read it back: arguments with spaces or
    /// quotes in single quotes (`sh -c 'exit 3'`), cut to `limit` characters.
    static func command(_ argv: [String], limit: Int = 40) -> String {
        let words = argv.map { word -> String in
            let plain = !word.isEmpty && word.allSatisfy { $0.isLetter || $0.isNumber || "-_./=:,+@%".contains($0) }
            return plain ? word : "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
        }
        return oneLine(words.joined(separator: " "), limit: limit)
    }

    /// `text` on one line (line breaks and tabs as spaces), cut to `limit` characters with `…`.
    static func oneLine(_ text: String, limit: Int = 80) -> String {
        var flat = String(text.map { $0.isNewline || $0 == "\t" ? " " : $0 })
        if flat.count > limit { flat = String(flat.prefix(limit - 1)) + "…" }
        return flat
    }

    private static func twoDigits(_ value: Int64) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }
}
