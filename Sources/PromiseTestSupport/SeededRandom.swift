/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny seedable generator,
/// for the framer fuzzer and the simulation. Written here because the
/// standard library's generator cannot be seeded, and a failure found at
/// random is only useful when its seed replays it.
package struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    package init(seed: UInt64) {
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// An integer in `range` (which must not be empty). The modulo bias is
    /// negligible for the small ranges used here, and this is several times
    /// faster than the generic `Int.random(in:using:)` in a debug build.
    package mutating func int(_ range: Range<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    package mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    /// True with probability `percent`/100.
    package mutating func percent(_ percent: Int) -> Bool {
        int(0..<100) < percent
    }

    package mutating func pick<T>(_ choices: [T]) -> T {
        choices[int(0..<choices.count)]
    }

    package mutating func byte() -> UInt8 {
        UInt8(truncatingIfNeeded: next())
    }

    /// One of `choices`, each drawn with its weight.
    package mutating func weighted<T>(_ choices: [(weight: Int, value: T)]) -> T {
        var roll = int(0..<choices.reduce(0) { $0 + $1.weight })
        for choice in choices {
            if roll < choice.weight { return choice.value }
            roll -= choice.weight
        }
        return choices[choices.count - 1].value
    }
}
