/// Writing JSON by hand rather than through `JSONEncoder`: the daemon writes a
/// line per response and notification, and a direct byte writer avoids the
/// encoder's intermediate containers. Object members are written with sorted
/// keys, so equal values always produce equal bytes.
extension JSONValue {
    /// The compact JSON text of this value, as UTF-8 bytes (no trailing newline).
    public func serialized() -> [UInt8] {
        JSONTextBuffer.bytes { write(to: &$0) }
    }

    /// ``serialized()`` and a newline: one line of a line-delimited stream.
    func serializedLine() -> [UInt8] {
        JSONTextBuffer.line { write(to: &$0) }
    }

    /// Appends the compact JSON text of this value to `out`.
    public func write(into out: inout [UInt8]) {
        out += serialized()
    }

    /// Appends the compact JSON text of this value to `text`.
    func write(to text: inout JSONTextBuffer) {
        switch self {
        case .null:
            text.append("null")
        case .bool(let b):
            text.append(b ? "true" : "false")
        case .int(let i):
            Self.writeInt(i, to: &text)
        case .double(let d):
            Self.writeDouble(d, to: &text)
        case .number(let n):
            var written = n.text
            written.withUTF8 { text.append($0) }
        case .string(let s):
            JSONValue.writeString(s, to: &text)
        case .array(let elements):
            text.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { text.append(UInt8(ascii: ",")) }
                element.write(to: &text)
            }
            text.append(UInt8(ascii: "]"))
        case .object(let members):
            text.append(UInt8(ascii: "{"))
            // Sorting the members themselves spares a hash look-up per key.
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { text.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, to: &text)
                text.append(UInt8(ascii: ":"))
                member.value.write(to: &text)
            }
            text.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `d` as JSON text: null when it is not finite.
    static func writeDouble(_ d: Double, to text: inout JSONTextBuffer) {
        // JSON has no infinities or NaN; null is the conventional stand-in.
        // 0 and 1 (every progress but a partial one) spare a float formatting.
        if d == 0 && d.sign == .plus {
            text.append("0.0")
        } else if d == 1 {
            text.append("1.0")
        } else if d.isFinite {
            var formatted = String(d)
            formatted.withUTF8 { text.append($0) }
        } else {
            text.append("null")
        }
    }

    /// Appends the decimal digits of `value`, without making a `String` of
    /// it first: records hold several numbers (times, ids), and formatting
    /// each through `String(_:)` cost about four times as much.
    static func writeInt(_ value: Int, to text: inout JSONTextBuffer) {
        if value >= 0 && value < 10 {
            return text.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
        }
        // The digits are counted first and written in place, last first:
        // written on the stack and then copied, they cost a call to
        // `memcpy`. Four at a time (a record's times have 13), as two pairs
        // from a table of "00" to "99": one 64-bit division per four digits.
        var rest = value.magnitude
        let sign = value < 0 ? 1 : 0
        let count = sign &+ decimalDigitCount(rest)
        text.append(count: count) { out in
            let pairs = UnsafeRawPointer(digitPairs.utf8Start)
            let digits = UnsafeMutableRawPointer(out)
            var end = count
            while rest >= 10_000 {
                let four = UInt32(truncatingIfNeeded: rest % 10_000)
                rest /= 10_000
                end &-= 4
                digits.storeBytes(of: pairs.loadUnaligned(fromByteOffset: Int(four / 100) &* 2, as: UInt16.self),
                                  toByteOffset: end, as: UInt16.self)
                digits.storeBytes(of: pairs.loadUnaligned(fromByteOffset: Int(four % 100) &* 2, as: UInt16.self),
                                  toByteOffset: end &+ 2, as: UInt16.self)
            }
            while rest >= 100 {
                let two = Int(truncatingIfNeeded: rest % 100)
                rest /= 100
                end &-= 2
                digits.storeBytes(of: pairs.loadUnaligned(fromByteOffset: two &* 2, as: UInt16.self),
                                  toByteOffset: end, as: UInt16.self)
            }
            if rest >= 10 {
                digits.storeBytes(of: pairs.loadUnaligned(fromByteOffset: Int(rest) &* 2, as: UInt16.self),
                                  toByteOffset: end &- 2, as: UInt16.self)
            } else {
                out[end &- 1] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest)
            }
            if sign == 1 { out[0] = UInt8(ascii: "-") }
        }
    }

    /// How many decimal digits `n` has (1 for 0): from its count of bits,
    /// which gives the count or one less, and one comparison.
    static func decimalDigitCount(_ n: UInt) -> Int {
        // log10(2) ≈ 1233 / 4096.
        let estimate = ((64 &- n.leadingZeroBitCount) &* 1233) &>> 12
        return n < powersOfTen[estimate] ? max(estimate, 1) : estimate &+ 1
    }

    /// 10⁰ to 10¹⁹, the powers of ten a `UInt` holds.
    private static let powersOfTen: [UInt] = (0..<20).reduce(into: []) { powers, index in
        powers.append(index == 0 ? 1 : powers[index - 1] * 10)
    }

    private static var digitPairs: StaticString {
        """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """
    }

    /// Whether `bytes` hold a quote, a backslash or a control character:
    /// eight bytes at a time (see ``ByteLanes``), the last eight
    /// overlapping those before; byte by byte only below eight bytes.
    private static func needsEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count >= 8 else {
            return bytes.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
        }
        var offset = 0
        while offset &+ 8 < bytes.count {
            if ByteLanes.special(ByteLanes.load(bytes, at: offset)) != 0 { return true }
            offset &+= 8
        }
        return ByteLanes.special(ByteLanes.load(bytes, at: bytes.count &- 8)) != 0
    }

    /// Writes `s` as a JSON string literal, escaping what RFC 8259 requires.
    static func writeString(_ s: String, to text: inout JSONTextBuffer) {
        text.append(UInt8(ascii: "\""))
        // Most strings (ids, states, member names) need no escape: checked
        // and copied whole from the string's own bytes, in one pass.
        let copied = s.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard !needsEscape(bytes) else { return false }
            text.append(bytes)
            return true
        }
        if copied != true {
            for byte in s.utf8 {
                switch byte {
                case UInt8(ascii: "\""): text.append(#"\""#)
                case UInt8(ascii: "\\"): text.append(#"\\"#)
                case UInt8(ascii: "\n"): text.append(#"\n"#)
                case UInt8(ascii: "\r"): text.append(#"\r"#)
                case UInt8(ascii: "\t"): text.append(#"\t"#)
                case 0..<0x20:
                    let hex: StaticString = "0123456789abcdef"
                    text.append(#"\u00"#)
                    text.append(hex.utf8Start[Int(byte >> 4)])
                    text.append(hex.utf8Start[Int(byte & 0xF)])
                default:
                    text.append(byte)
                }
            }
        }
        text.append(UInt8(ascii: "\""))
    }
}
