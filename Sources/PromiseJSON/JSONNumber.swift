/// A JSON number kept as it was written, for the numbers that neither `Int`
/// nor `Double` holds exactly: integers past 64 bits, decimals of more
/// than 15 significant digits, magnitudes past `Double`'s range either way
/// (`1e400`, `1e-400`) or among its subnormal numbers, which keep fewer
/// digits (`3e-324`).
///
/// A value is data passed between programs: read into a `Double`,
/// `18446744073709551615` would come back as `1.8446744073709552e+19`,
/// `1e-400` as `0` and `3e-324` as `5e-324`. The text is checked against
/// RFC 8259's number grammar, so it is always written back as valid JSON.
///
/// ```swift
/// let big = try JSONValue(parsing: "18446744073709551615")
/// big                              // .number(JSONNumber("18446744073709551615"))
/// String(decoding: big.serialized(), as: UTF8.self)   // "18446744073709551615"
/// JSONNumber("1.5e")               // nil: not a JSON number
/// ```
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number as written.
    public let text: String

    /// `text` if it is a JSON number (RFC 8259), else nil.
    public init?(_ text: String) {
        guard Self.isNumber(text.utf8) else { return nil }
        self.text = text
    }

    /// For the parser, which has checked the grammar already.
    init(unchecked text: String) {
        self.text = text
    }

    /// The nearest `Double` (infinite past its range).
    public var doubleValue: Double { Double(text) ?? .nan }

    public var description: String { text }

    /// Whether the significant digits of the number written in `bytes` are
    /// more than a `Double` keeps exactly through a round trip (15).
    static func hasMoreDigitsThanDouble(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var significant = 0
        for byte in bytes {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { break }
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { continue }
            // Leading zeros (as in 0.000123) are not significant.
            if significant == 0 && byte == UInt8(ascii: "0") { continue }
            significant += 1
        }
        return significant > 15
    }

    /// Whether the number written in `bytes` has a digit other than 0 before
    /// its exponent: a number that is not zero, whatever a `Double` makes of it.
    static func hasNonZeroDigit(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in bytes {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { return false }
            if byte >= UInt8(ascii: "1") && byte <= UInt8(ascii: "9") { return true }
        }
        return false
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private static func isNumber(_ utf8: String.UTF8View) -> Bool {
        var bytes = utf8.makeIterator()
        var next = bytes.next()
        func isDigit(_ byte: UInt8?) -> Bool { byte.map { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } ?? false }
        func digits() -> Bool {
            guard isDigit(next) else { return false }
            while isDigit(next) { next = bytes.next() }
            return true
        }
        if next == UInt8(ascii: "-") { next = bytes.next() }
        if next == UInt8(ascii: "0") {
            next = bytes.next()
        } else if !digits() {
            return false
        }
        if next == UInt8(ascii: ".") {
            next = bytes.next()
            guard digits() else { return false }
        }
        if next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            next = bytes.next()
            if next == UInt8(ascii: "+") || next == UInt8(ascii: "-") { next = bytes.next() }
            guard digits() else { return false }
        }
        return next == nil
    }
}
