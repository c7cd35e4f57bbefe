/// How long a value's JSON text is, without writing it.
///
/// Combinators make values from other values, and an `all` over one 1 MB
/// value repeated 800 times is an 800 MB value made from a 3 KB request: a
/// value that is only references until it is serialized, when it takes the
/// memory (and the row, and the line) at once. The daemon measures such a
/// value before it keeps it, by walking it: strings know their UTF-8 length,
/// and the walk stops as soon as the count passes the limit asked about, so
/// measuring costs at most the limit's worth of scanning whatever the value's size.
extension JSONValue {
    /// The longest text `write(to:)` gives a finite double: `String(_:)`
    /// writes at most 17 significant digits, a point, a sign and an exponent
    /// (`-2.2250738585072014e-308`).
    static let maxDoubleBytes = 24

    /// The number of bytes of ``serialized()``, counted without writing it;
    /// once the count passes `limit`, some number over `limit` (the walk stops there).
    ///
    /// Exact, except for a double with a fraction or an exponent, counted as
    /// the longest a double can be written (24 bytes): the count is never less
    /// than the text's length.
    ///
    /// ```swift
    /// let value: JSONValue = ["a": "x\n", "b": [1, true]]
    /// value.serializedByteCount()              // 24, as value.serialized().count
    /// value.serializedByteCount(upTo: 10) > 10 // true, having looked at less
    /// ```
    public func serializedByteCount(upTo limit: Int = .max) -> Int {
        var total = 0
        count(into: &total, limit: limit)
        return total
    }

    private func count(into total: inout Int, limit: Int) {
        switch self {
        case .null:
            total += 4
        case .bool(let flag):
            total += flag ? 4 : 5
        case .int(let number):
            total += Self.decimalByteCount(number)
        case .double(let number):
            if number == 0 && number.sign == .plus || number == 1 {
                total += 3  // "0.0", "1.0"
            } else {
                total += number.isFinite ? Self.maxDoubleBytes : 4  // "null"
            }
        case .number(let number):
            total += number.text.utf8.count  // Written as it came.
        case .string(let text):
            total += Self.quotedByteCount(text, limit: limit - total)
        case .array(let elements):
            total += 2 + max(0, elements.count - 1)
            for element in elements {
                guard total <= limit else { return }
                element.count(into: &total, limit: limit)
            }
        case .object(let members):
            total += 2 + max(0, members.count - 1)
            for (key, value) in members {
                guard total <= limit else { return }
                total += Self.quotedByteCount(key, limit: limit - total) + 1
                value.count(into: &total, limit: limit)
            }
        }
    }

    /// The length of `number` in decimal, with its sign.
    static func decimalByteCount(_ number: Int) -> Int {
        var digits = 1
        var rest = number.magnitude
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        return number < 0 ? digits + 1 : digits
    }

    /// The length of `text` as a JSON string literal, quotes and escapes
    /// included (as ``writeString(_:to:)`` writes it). When the unescaped
    /// length alone passes `limit`, that length: escapes only add to it.
    package static func quotedByteCount(_ text: String, limit: Int) -> Int {
        let plain = text.utf8.count + 2
        guard plain <= limit else { return plain }
        func escapes(_ bytes: some Sequence<UInt8>) -> Int {
            var extra = 0
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                    extra += 1  // \" \\ \n \r \t
                default:
                    extra += 5  // \u00XX
                }
            }
            return extra
        }
        let extra = text.utf8.withContiguousStorageIfAvailable { escapes($0) } ?? escapes(text.utf8)
        return plain + extra
    }
}
