import PromiseJSON

/// The rules for promise ids: printable text of 1 to 256 UTF-8 bytes, chosen
/// by clients so that unrelated scripts meet on a well-known name
/// ("build/lib"), or made by the daemon when a client leaves it out.
///
/// ```swift
/// PromiseID.problem(with: "build/lib")   // nil: fine
/// PromiseID.problem(with: "a\nb")        // "it contains a control character"
/// ```
public enum PromiseID {
    /// The longest id, in UTF-8 bytes.
    public static let maxBytes = 256

    /// Why `text` is not a valid id, or nil when it is.
    public static func problem(with text: String) -> String? {
        problem(with: text, knownPrintableASCII: false)
    }

    /// The same, for text whose bytes may be known already to be printable
    /// ASCII (`knownPrintableASCII`, as the request parser tells the strings
    /// it read): then only its length is checked, its bytes not read again
    /// (docs/PERFORMANCE.md).
    @inline(__always)
    package static func problem(with text: String, knownPrintableASCII: Bool) -> String? {
        if text.isEmpty { return "it is empty" }
        if text.utf8.count > maxBytes { return "it is longer than \(maxBytes) bytes" }
        if knownPrintableASCII { return nil }
        // Printable ASCII, what ids nearly always are, is checked from the
        // string's own storage, eight bytes at a time, not by walking its
        // Unicode scalars or its bytes one by one (docs/PERFORMANCE.md).
        let printableASCII = text.utf8.withContiguousStorageIfAvailable(isPrintableASCII)
        if printableASCII == true { return nil }
        for scalar in text.unicodeScalars {
            // Printable ASCII, what ids nearly always are, needs no Unicode table look-up.
            if scalar.value >= 0x20 && scalar.value < 0x7F { continue }
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                return "it contains a character that is not printable (U+\(String(scalar.value, radix: 16, uppercase: true)))"
            default:
                continue
            }
        }
        return nil
    }

    /// Whether every byte is printable ASCII, 0x20 to 0x7E.
    static func isPrintableASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = ByteLanes.load(bytes, at: offset)
            if ByteLanes.control(word) | ByteLanes.atLeastDelete(word) != 0 { return false }
            offset += 8
        }
        return bytes[offset...].allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    /// True when `text` is a valid id.
    public static func isValid(_ text: String) -> Bool { problem(with: text) == nil }
}
