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
    package func serializedLine() -> [UInt8] {
        JSONTextBuffer.line { write(to: &$0) }
    }

    /// Appends the compact JSON text of this value to `out`.
    public func write(into out: inout [UInt8]) {
        out += serialized()
    }

    /// Appends the compact JSON text of this value to `text`.
    package func write(to text: inout JSONTextBuffer) {
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
    ///
    /// Inlined: 0 and 1 (every progress but a partial one) are then a
    /// comparison and a store of three bytes in the record's writer, not a
    /// call each (docs/PERFORMANCE.md).
    @inline(__always)
    package static func writeDouble(_ d: Double, to text: inout JSONTextBuffer) {
        // 0 and 1 spare a float formatting.
        if d == 0 && d.sign == .plus {
            text.append("0.0")
        } else if d == 1 {
            text.append("1.0")
        } else {
            writeFormatted(d, to: &text)
        }
    }

    /// ``writeDouble(_:to:)`` for any other number.
    private static func writeFormatted(_ d: Double, to text: inout JSONTextBuffer) {
        // JSON has no infinities or NaN; null is the conventional stand-in.
        if d.isFinite {
            var formatted = String(d)
            formatted.withUTF8 { text.append($0) }
        } else {
            text.append("null")
        }
    }

    /// Appends the decimal digits of `value`, without making a `String` of
    /// it first: records hold several numbers (times, ids), and formatting
    /// each through `String(_:)` costs several times as much
    /// (docs/PERFORMANCE.md).
    @inline(__always)
    package static func writeInt(_ value: Int, to text: inout JSONTextBuffer) {
        if value >= 0 && value < 10 {
            return text.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
        }
        // Eight digits at a time (``eightDigits(_:)``), the first group
        // without its leading zeros, stored as whole words: a record's times
        // have 13 digits, a group of 5 and one of 8, and a create + resolve
        // pair's answers hold three of them. This is cheaper than counting
        // the digits against a table of powers of ten (behind a `swift_once`)
        // and writing them two by two from a table of "00" to "99"
        // (docs/PERFORMANCE.md). Each store writes 8 bytes, some past the
        // digits: room is made for them, and the count covers only the
        // digits.
        let magnitude = UInt64(value.magnitude)
        let isNegative = value < 0
        text.append(upTo: 1 + 3 * 8) { out in
            let digits = UnsafeMutableRawPointer(out)
            var end = 0
            if isNegative {
                out[0] = UInt8(ascii: "-")
                end = 1
            }
            let low = magnitude % 100_000_000
            let high = magnitude / 100_000_000
            if high == 0 {
                return end &+ storeLeadingDigits(low, at: digits + end)
            }
            if high < 100_000_000 {
                end &+= storeLeadingDigits(high, at: digits + end)
            } else {
                end &+= storeLeadingDigits(high / 100_000_000, at: digits + end)
                digits.storeBytes(of: eightDigits(high % 100_000_000).littleEndian, toByteOffset: end, as: UInt64.self)
                end &+= 8
            }
            digits.storeBytes(of: eightDigits(low).littleEndian, toByteOffset: end, as: UInt64.self)
            return end &+ 8
        }
    }

    /// Stores the digits of `n` (1 to 99,999,999) without leading zeros,
    /// as one 8-byte word whose bytes past them are zero; returns how many
    /// digits there are.
    @inline(__always)
    private static func storeLeadingDigits(_ n: UInt64, at destination: UnsafeMutableRawPointer) -> Int {
        let digits = eightDigits(n)
        // Its leading zeros are the lanes below the lowest one whose digit,
        // without its ASCII offset, is not 0.
        let zeroBits = (digits & ~asciiZeros).trailingZeroBitCount & ~7
        destination.storeBytes(of: (digits >> UInt64(zeroBits)).littleEndian, as: UInt64.self)
        return 8 &- zeroBits &>> 3
    }

    private static var asciiZeros: UInt64 { 0x3030_3030_3030_3030 }

    /// The eight decimal digits of `n` (below 10⁸, leading zeros included)
    /// as ASCII, the first digit in the lowest byte: split into halves of
    /// four digits, each half into two pairs, each pair into two digits, all
    /// halves (then pairs, then digits) at once in the lanes of one word,
    /// by multiplying and shifting (x / 100 is (x × 10,486) >> 20 for
    /// x < 10,000, and y / 10 is (y × 103) >> 10 for y < 100).
    @inline(__always)
    static func eightDigits(_ n: UInt64) -> UInt64 {
        let halves = (n / 10_000) | ((n % 10_000) << 32)
        let hundreds = ((halves &* 10_486) >> 20) & 0x0000_007F_0000_007F
        let pairs = hundreds | ((halves &- hundreds &* 100) << 16)
        let tens = ((pairs &* 103) >> 10) & 0x000F_000F_000F_000F
        return tens | ((pairs &- tens &* 10) << 8) | asciiZeros
    }

    /// Whether `bytes` hold a quote, a backslash or a control character:
    /// eight bytes at a time (see ``ByteLanes``), the last eight
    /// overlapping those before. Inlined into ``writeString(_:to:)``, which
    /// would otherwise make a call for every string (docs/PERFORMANCE.md).
    @inline(__always)
    private static func needsEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count >= 8 else {
            return bytes.count > 0 && ByteLanes.special(shortWord(bytes)) != 0
        }
        var offset = 0
        while offset &+ 8 < bytes.count {
            if ByteLanes.special(ByteLanes.load(bytes, at: offset)) != 0 { return true }
            offset &+= 8
        }
        return ByteLanes.special(ByteLanes.load(bytes, at: bytes.count &- 8)) != 0
    }

    /// The 1 to 7 bytes of `bytes` in the lanes of one word, some of them
    /// twice, and nothing else: for ``needsEscape(_:)``, to which a byte
    /// seen twice makes no difference. Short strings are most of what a
    /// record holds (ids like `k42`), and looked at byte by byte each byte
    /// takes three comparisons and a branch (see ``ByteLanes``).
    @inline(__always)
    private static func shortWord(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let start = UnsafeRawPointer(bytes.baseAddress!)
        let count = bytes.count
        if count >= 4 {
            let head = UInt32(littleEndian: start.loadUnaligned(as: UInt32.self))
            let tail = UInt32(littleEndian: start.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self))
            return UInt64(head) | UInt64(tail) << 32
        }
        let first = UInt64(start.load(as: UInt8.self))
        let middle = UInt64(start.load(fromByteOffset: count &>> 1, as: UInt8.self))
        let last = UInt64(start.load(fromByteOffset: count &- 1, as: UInt8.self))
        let three = first | middle << 8 | last << 16
        return three | three << 24 | three << 48
    }

    /// Writes `s` as a JSON string literal, escaping what RFC 8259 requires.
    package static func writeString(_ s: String, to text: inout JSONTextBuffer) {
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
