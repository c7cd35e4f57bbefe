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
        if text.isEmpty { return "it is empty" }
        if text.utf8.count > maxBytes { return "it is longer than \(maxBytes) bytes" }
        // Printable ASCII, what ids nearly always are, is checked byte by
        // byte from the string's own storage: walking its Unicode scalars
        // cost some 300 instructions per request naming an id.
        let printableASCII = text.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
        }
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

    /// True when `text` is a valid id.
    public static func isValid(_ text: String) -> Bool { problem(with: text) == nil }
}
