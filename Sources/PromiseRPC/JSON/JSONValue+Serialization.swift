/// Writing JSON by hand rather than through `JSONEncoder`: the daemon writes a
/// line per response and notification, and a direct byte writer avoids the
/// encoder's intermediate containers. Object members are written with sorted
/// keys, so equal values always produce equal bytes.
extension JSONValue {
    /// The compact JSON text of this value, as UTF-8 bytes (no trailing newline).
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(into: &out)
        return out
    }

    /// Appends the compact JSON text of this value to `out`.
    public func write(into out: inout [UInt8]) {
        switch self {
        case .null:
            Self.writeLiteral("null", into: &out)
        case .bool(let b):
            Self.writeLiteral(b ? "true" : "false", into: &out)
        case .int(let i):
            Self.writeInt(i, into: &out)
        case .double(let d):
            // JSON has no infinities or NaN; null is the conventional stand-in.
            // 0 and 1 (every progress but a partial one) spare a float formatting.
            if d == 0 && d.sign == .plus {
                Self.writeLiteral("0.0", into: &out)
            } else if d == 1 {
                Self.writeLiteral("1.0", into: &out)
            } else if d.isFinite {
                out.append(contentsOf: String(d).utf8)
            } else {
                Self.writeLiteral("null", into: &out)
            }
        case .string(let s):
            JSONValue.writeString(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            // Sorting the members themselves spares a hash look-up per key.
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends text known at compile time. (Appending a `String`'s UTF-8
    /// view goes through a generic copy several times as long.)
    static func writeLiteral(_ text: StaticString, into out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    /// Appends the decimal digits of `value`, without making a `String` of
    /// it first: records hold several numbers (times, ids), and formatting
    /// each through `String(_:)` cost about four times as much.
    static func writeInt(_ value: Int, into out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // UInt64.max has 20 digits; they are produced last first.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Writes `s` as a JSON string literal, escaping what RFC 8259 requires.
    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (ids, states, member names) need no escape: checked
        // and copied whole from the string's own bytes, in one pass.
        let copied = s.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                return false
            }
            out.append(contentsOf: bytes)
            return true
        }
        if copied == true {
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\n"): out.append(contentsOf: #"\n"#.utf8)
            case UInt8(ascii: "\r"): out.append(contentsOf: #"\r"#.utf8)
            case UInt8(ascii: "\t"): out.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
