import ArgumentParser

/// How long settled promises are kept: `--retain 24h`. A number with a unit
/// (`ms`, `s`, `m`, `h`, `d`); a bare number counts seconds.
struct RetentionPeriod: ExpressibleByArgument, Sendable, Hashable, CustomStringConvertible {
    let milliseconds: Int64

    static let units: [(suffix: String, milliseconds: Int64)] = [
        ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000),
    ]

    init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    init?(argument: String) {
        // "ms" before "m" and "s": the longest suffix that matches wins.
        let unit = Self.units.filter { argument.hasSuffix($0.suffix) }.max { $0.suffix.count < $1.suffix.count }
        let number = unit.map { String(argument.dropLast($0.suffix.count)) } ?? argument
        guard let amount = Int64(number), amount >= 0 else { return nil }
        let (product, overflow) = amount.multipliedReportingOverflow(by: unit?.milliseconds ?? 1000)
        guard !overflow else { return nil }
        milliseconds = product
    }

    var description: String {
        let exact = Self.units.reversed().first { milliseconds % $0.milliseconds == 0 && milliseconds > 0 }
        guard let exact else { return "\(milliseconds)ms" }
        return "\(milliseconds / exact.milliseconds)\(exact.suffix)"
    }

    var defaultValueDescription: String { description }
}
