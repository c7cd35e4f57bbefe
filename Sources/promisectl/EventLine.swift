import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// `promisectl watch`'s line for people, one per notification: the local
/// time it arrived, the id, and what happened.
///
/// ```
/// 14:02:11  build/lib  40%  compiled 120 of 300 files
/// 14:02:19  build/lib  fulfilled  "libfoo.so"  [8.1s]  exit 0
/// 14:02:20  build/test  rejected: 2 tests failed (code 1)  [0.9s]  exit 1
/// ```
enum EventLine {
    static func text(for notification: BlockingPromiseClient.Notification, now: Int64, timeZone: TimeZone = .current) -> String {
        let time = Format.clock(milliseconds: now, now: now, timeZone: timeZone)
        let params = notification.params
        switch notification.method {
        case "progress":
            let id = params["id"]?.stringValue ?? "?"
            var parts = [time, id]
            if let fraction = params["progress"]?.doubleValue { parts.append(Format.percent(fraction)) }
            if let message = params["message"]?.stringValue, !message.isEmpty { parts.append(Format.oneLine(message)) }
            return parts.joined(separator: "  ")
        case "settled":
            guard let record = try? BlockingPromiseClient.Record(params) else { break }
            let view = RecordView(record)
            var outcome = view.state
            switch record.state {
            case .fulfilled: outcome += "  " + Format.oneLine(Output.json(record.value ?? .null))
            case .rejected, .cancelled: outcome += Format.oneLine(Output.reasonSuffix(record))
            case .pending: break
            }
            var parts = [time, record.id, outcome]
            if record.state != .pending, let duration = view.duration(now: now) {
                parts.append("[" + Format.duration(milliseconds: duration) + "]")
            }
            if let exitStatus = view.exitStatus { parts.append("exit \(exitStatus)") }
            return parts.joined(separator: "  ")
        default:
            break
        }
        return [time, notification.method, Format.oneLine(Output.json(params))].joined(separator: "  ")
    }
}
