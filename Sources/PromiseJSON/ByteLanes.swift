/// Eight bytes of JSON text looked at at once, as the lanes of a `UInt64`
/// (the first byte in the lowest lane): how the parser and the writer find
/// the bytes that end or escape a string, the quote, the backslash and the
/// control characters, in the ids and names that make up most of a line.
///
/// Byte by byte, each needs three comparisons and a branch, a large part of
/// the cost of reading or writing an id (docs/PERFORMANCE.md).
/// Each test here marks a lane by its high bit (0x80). A mark can also
/// appear in a lane above a marked one (a borrow), never below it: the
/// lowest mark is exact, and so is "no mark".
///
/// ```swift
/// let word = Array(#"ab"cdefg"#.utf8).withUnsafeBufferPointer { ByteLanes.load($0, at: 0) }
/// ByteLanes.firstMarked(ByteLanes.special(word))   // 2: the quote
/// ```
package enum ByteLanes {
    static let ones: UInt64 = 0x0101_0101_0101_0101
    static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The 8 bytes from `offset`, which must all be in `bytes`.
    @inline(__always)
    package static func load(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(bytes.baseAddress! + offset).loadUnaligned(as: UInt64.self))
    }

    /// Marks the lanes that are zero.
    @inline(__always)
    static func zero(_ word: UInt64) -> UInt64 {
        (word &- ones) & ~word & highBits
    }

    /// Marks the lanes equal to `byte`.
    @inline(__always)
    static func equal(_ word: UInt64, _ byte: UInt8) -> UInt64 {
        zero(word ^ (ones &* UInt64(byte)))
    }

    /// Marks the lanes below 0x20: control characters, which JSON escapes.
    @inline(__always)
    package static func control(_ word: UInt64) -> UInt64 {
        (word &- ones &* 0x20) & ~word & highBits
    }

    /// Marks the lanes of 0x7F (DEL) or more: not printable ASCII. Adding
    /// one carries out of a lane only from 0xFF, which is marked itself.
    @inline(__always)
    package static func atLeastDelete(_ word: UInt64) -> UInt64 {
        ((word &+ ones) | word) & highBits
    }

    /// Marks what a string cannot hold as it is: a quote, a backslash or a
    /// control character (where the parser stops, and the writer escapes).
    @inline(__always)
    static func special(_ word: UInt64) -> UInt64 {
        equal(word, UInt8(ascii: "\"")) | equal(word, UInt8(ascii: "\\")) | control(word)
    }

    /// The lane of the lowest mark (8 when there is none).
    @inline(__always)
    static func firstMarked(_ marks: UInt64) -> Int {
        marks.trailingZeroBitCount &>> 3
    }
}
