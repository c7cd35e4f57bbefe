import ArgumentParser

/// A length of time on the command line, in the one syntax every command
/// takes (the daemon's `--retain` too): a number with a unit, `500ms`,
/// `10s`, `2m`, `1h`, `1d`, or a plain number of seconds (`2.5`).
///
/// ```swift
/// CommandDuration(argument: "10s")?.seconds    // 10
/// CommandDuration(argument: "500ms")?.seconds  // 0.5
/// CommandDuration(argument: "1.5")?.seconds    // 1.5
/// CommandDuration(argument: "10x")             // nil
/// ```
struct CommandDuration: ExpressibleByArgument, Sendable, Hashable {
    /// The length in seconds (negative, infinite or NaN as written: the commands check their own bounds).
    let seconds: Double

    /// The units, longest suffix first so that `ms` is not read as `m`.
    static let units: [(suffix: String, seconds: Double)] = [
        ("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400),
    ]

    /// How `--help` shows a default: `2s`.
    var defaultValueDescription: String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? "\(Int(seconds))s" : "\(seconds)s"
    }

    init(seconds: Double) {
        self.seconds = seconds
    }

    init?(argument: String) {
        let unit = Self.units.first { argument.hasSuffix($0.suffix) }
        let number = unit.map { String(argument.dropLast($0.suffix.count)) } ?? argument
        // Double takes "inf", "nan" and hexadecimal ("0x1p3"); a duration is decimal digits.
        guard let first = number.utf8.first, first == UInt8(ascii: "-") || first == UInt8(ascii: ".")
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
              !number.contains("x"), !number.contains("X"), let amount = Double(number) else { return nil }
        seconds = amount * (unit?.seconds ?? 1)
    }
}
