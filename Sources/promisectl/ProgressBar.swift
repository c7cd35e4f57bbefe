import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// `promisectl wait --progress`: how far the awaited promise has come,
/// redrawn on stderr as `progress` notifications arrive, so that stdout
/// keeps only the value.
///
/// ```
/// build/all [==============>               ]  48%  compiled 120 of 250 files
/// ```
///
/// On a terminal the bar is redrawn in place (carriage return, erase to the
/// end of the line) and erased when the wait ends; elsewhere each change is
/// a line of its own (`build/all  48%  compiled 120 of 250 files`), which a
/// log keeps readably. An `all` reports the progress of its inputs joined.
struct ProgressBar {
    /// The characters between the brackets.
    var barWidth = 30
    /// The terminal's width: the message is cut to fit it.
    var columns = 80

    /// The bar for a terminal, at most `columns` characters.
    func line(id: String, fraction: Double, message: String?) -> String {
        let clamped = fraction.isFinite ? min(1, max(0, fraction)) : 0
        let filled = Int((clamped * Double(barWidth)).rounded(.down))
        var bar = String(repeating: "=", count: filled)
        if filled < barWidth { bar += ">" + String(repeating: " ", count: barWidth - filled - 1) }
        let percent = Format.percent(clamped)
        var text = Format.oneLine(id, limit: 40) + " [" + bar + "] " + String(repeating: " ", count: 4 - percent.count) + percent
        if let message, !message.isEmpty {
            let room = columns - 1 - text.count - 2
            if room > 1 { text += "  " + Format.oneLine(message, limit: room) }
        }
        return text
    }

    /// The line for a stream that is not a terminal: no bar, nothing to redraw.
    static func plainLine(id: String, fraction: Double, message: String?) -> String {
        var parts = [id, Format.percent(min(1, max(0, fraction)))]
        if let message, !message.isEmpty { parts.append(Format.oneLine(message)) }
        return parts.joined(separator: "  ")
    }

    /// The terminal's width from `$COLUMNS`, else the terminal on stderr, else 80.
    static func terminalColumns() -> Int {
        if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 20 { return columns }
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 { return Int(size.ws_col) }
        return 80
    }
}

extension ProgressBar {
    /// Sends `wait` with `params` on `connection`, subscribed to `id`, and
    /// draws each progress notification until the answer comes; returns the
    /// answer. The subscription ends with the connection (the command's end).
    /// A daemon that goes away meanwhile is waited for as `connection`'s
    /// policy says, and the subscription and the `wait` are sent again on
    /// the new connection (the bar carries on from where it was).
    static func wait(for id: String, params: [String: JSONValue], connection: ReconnectingPromiseClient) throws -> JSONValue {
        let onTerminal = Terminal.standardErrorIsTerminal
        let bar = ProgressBar(columns: terminalColumns())
        var drawn = false
        var last: (Double, String?)?
        func draw(_ fraction: Double, _ message: String?) {
            guard last.map({ $0.0 != fraction || $0.1 != message }) ?? true else { return }
            last = (fraction, message)
            let text = onTerminal
                ? "\r" + bar.line(id: id, fraction: fraction, message: message) + "\u{1B}[K"
                : plainLine(id: id, fraction: fraction, message: message) + "\n"
            Output.write(text, to: STDERR_FILENO)
            drawn = true
        }
        defer {
            if drawn && onTerminal { Output.write("\r\u{1B}[K", to: STDERR_FILENO) }
        }

        return try connection.withReconnects { client in
            do {
                try client.call("subscribe", ["ids": .array([.string(id)])], timeout: nil)
            } catch is RPCError {
                // Refused (a limit on subscriptions): wait all the same, without a bar.
                return try client.call("wait", params, timeout: nil)
            }
            // Where it stands now: progress notifications come only as it moves.
            if let record = try? BlockingPromiseClient.Record(client.call("get", ["id": .string(id)], timeout: nil)),
                record.state == .pending, let fraction = record.json["progress"]?.doubleValue
            {
                draw(fraction, record.json["progressMessage"]?.stringValue)
            }
            let request = try client.send("wait", params)
            while true {
                do {
                    return try client.result(for: request, timeout: .milliseconds(100))
                } catch let error as PromiseClientError where error.code == .timedOut {
                    // No answer yet: draw what came meanwhile.
                }
                while let notification = try client.nextNotification(timeout: .zero) {
                    guard notification.method == "progress", notification.params["id"]?.stringValue == id,
                        let fraction = notification.params["progress"]?.doubleValue
                    else { continue }
                    draw(fraction, notification.params["message"]?.stringValue)
                }
            }
        }
    }
}
