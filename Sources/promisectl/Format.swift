import Foundation

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
    /// quotes in single quotes (`sh -c 'exit 3'`), cut in the middle to
    /// `limit` characters, since a compile command names its file at the end:
    /// `cc -O2 -Wall -Wextra -DLUA_COMP…-c lapi.c -o lapi.o`.
    static func command(_ argv: [String], limit: Int = 60) -> String {
        let words = argv.map { word -> String in
            let plain = !word.isEmpty && word.allSatisfy { $0.isLetter || $0.isNumber || "-_./=:,+@%".contains($0) }
            return plain ? word : "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
        }
        return middleCut(oneLine(words.joined(separator: " "), limit: .max), limit: limit)
    }

    /// `text` cut to `limit` characters by dropping its middle for `…`: the
    /// head keeps one character more than the tail when they differ.
    static func middleCut(_ text: String, limit: Int) -> String {
        guard text.count > limit, limit > 0 else { return text }
        let kept = limit - 1
        let tail = kept / 2
        return String(text.prefix(kept - tail)) + "…" + String(text.suffix(tail))
    }

    /// A fraction as a whole percentage, rounded down: `0.426` is `42%`.
    static func percent(_ fraction: Double) -> String {
        "\(Int((fraction * 100).rounded(.down)))%"
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
