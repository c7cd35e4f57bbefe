import Foundation

/// Fuzz settings a person can override to reproduce a failure or soak longer
/// (`FUZZ_SEED=… FUZZ_SCALE=20 swift test --filter FuzzTests`; see scripts/fuzz-soak.sh).
enum FuzzSettings {
    /// `FUZZ_SEED` (decimal or 0x hex), else `fallback`: CI runs are reproducible.
    static func seed(_ fallback: UInt64) -> UInt64 {
        guard let text = ProcessInfo.processInfo.environment["FUZZ_SEED"] else { return fallback }
        if text.hasPrefix("0x") { return UInt64(text.dropFirst(2), radix: 16) ?? fallback }
        return UInt64(text) ?? fallback
    }

    /// `FUZZ_SCALE` multiplies every iteration count (default 1).
    static var scale: Int {
        ProcessInfo.processInfo.environment["FUZZ_SCALE"].flatMap { Int($0) }.map { max(1, $0) } ?? 1
    }

    /// `bytes` as a readable literal for a failure message (at most `limit` characters).
    static func show(_ bytes: [UInt8], limit: Int = 400) -> String {
        let text: String
        if let valid = String(validating: bytes, as: UTF8.self) {
            text = valid.debugDescription
        } else {
            text = "bytes " + bytes.map { String($0, radix: 16) }.joined(separator: " ")
        }
        return text.count <= limit ? text : String(text.prefix(limit)) + "…(\(bytes.count) bytes)"
    }
}
