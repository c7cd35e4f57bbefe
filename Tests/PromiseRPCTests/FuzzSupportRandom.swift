import Foundation

/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny seedable generator.
/// Written here because the standard library's generator cannot be seeded
/// and a fuzz failure is only useful when its seed reproduces it.
struct FuzzRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// An integer in `range` (which must not be empty). The modulo bias is
    /// negligible for the small ranges used here, and this is several times
    /// faster than the generic `Int.random(in:using:)` in a debug build.
    mutating func int(_ range: Range<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    /// True with probability `percent`/100.
    mutating func percent(_ percent: Int) -> Bool {
        int(0..<100) < percent
    }

    mutating func pick<T>(_ choices: [T]) -> T {
        choices[int(0..<choices.count)]
    }

    mutating func byte() -> UInt8 {
        UInt8(truncatingIfNeeded: next())
    }
}

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
