import Foundation

/// The lines `promisectl get` adds for people under its one-line summary:
/// what a pipeline step is doing (progress message, command, pid, times,
/// exit status), each as `  name  value`, only those that are there.
///
/// ```
/// pending (40%)
///   message   compiled 120 of 300 files
///   state     running, pid 41235
///   started   14:02:11
///   duration  12.4s
/// ```
enum RecordDetails {
    static func lines(for view: RecordView, now: Int64, timeZone: TimeZone = .current) -> [String] {
        var fields: [(String, String)] = []
        if let message = view.progressMessage, !message.isEmpty { fields.append(("message", Format.oneLine(message, limit: 200))) }
        if view.state == "running" || view.state == "queued" {
            fields.append(("state", view.state + (view.pid.map { ", pid \($0)" } ?? "")))
        }
        if let exec = view.exec { fields.append(("command", Format.command(exec, limit: 200))) }
        if let started = view.started { fields.append(("started", Format.clock(milliseconds: started, now: now, timeZone: timeZone))) }
        if let duration = view.duration(now: now) { fields.append(("duration", Format.duration(milliseconds: duration))) }
        if let exitStatus = view.exitStatus { fields.append(("exit", String(exitStatus))) }
        return fields.map { name, value in "  " + name + String(repeating: " ", count: 10 - name.count) + value }
    }
}
