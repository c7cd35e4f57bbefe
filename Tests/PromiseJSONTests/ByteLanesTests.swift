@testable import PromiseJSON
import PromiseTestSupport
import Testing

/// `ByteLanes` marks bytes eight at a time; the parser stops at its first
/// mark and the writer escapes when there is any, so the lowest mark must
/// be the first byte a byte-by-byte look finds, wherever it falls.
@Suite("Byte lanes: eight bytes looked at at once")
struct ByteLanesTests {
    /// The lane of the first quote, backslash or control character, byte by byte (8: none).
    private func firstSpecial(_ bytes: [UInt8]) -> Int {
        bytes.firstIndex { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") } ?? 8
    }

    private func word(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBufferPointer { ByteLanes.load($0, at: 0) }
    }

    @Test("every byte value in every lane, after harmless bytes and after another special byte, is marked as a byte-by-byte look says")
    func everyByteInEveryLane() {
        for lane in 0..<8 {
            for value in 0...255 {
                for filler: [UInt8] in [Array("abcdefgh".utf8), [0x20, 0x7F, 0x80, 0xFF, 0x21, 0x5B, 0x5D, 0xC3]] {
                    var bytes = filler
                    bytes[lane] = UInt8(value)
                    #expect(ByteLanes.firstMarked(ByteLanes.special(word(bytes))) == firstSpecial(bytes),
                            "\(bytes)")
                    // A special byte below: the mark above may be a borrow, but the first is still exact.
                    if lane > 0 {
                        bytes[lane - 1] = 0x00
                        #expect(ByteLanes.firstMarked(ByteLanes.special(word(bytes))) == lane - 1, "\(bytes)")
                    }
                }
            }
        }
    }

    @Test("atLeastDelete marks 0x7F and above, in every lane, whatever the other lanes hold")
    func atLeastDeleteInEveryLane() {
        for lane in 0..<8 {
            for value in 0...255 {
                for filler: [UInt8] in [Array("abcdefgh".utf8), [0x20, 0x7E, 0x00, 0x1F, 0x21, 0x5B, 0x5D, 0x41]] {
                    var bytes = filler
                    bytes[lane] = UInt8(value)
                    let marks = ByteLanes.atLeastDelete(word(bytes))
                    #expect((marks != 0) == (value >= 0x7F), "\(bytes)")
                    if value >= 0x7F { #expect(ByteLanes.firstMarked(marks) == lane, "\(bytes)") }
                }
            }
        }
    }

    @Test("random words are marked, or not, as a byte-by-byte look says")
    func randomWords() {
        var random = SeededRandom(seed: 0x1a2e5)
        for _ in 0..<20_000 {
            // Bytes near the ones that matter, so that most words hold some.
            let bytes = (0..<8).map { _ -> UInt8 in
                let pick = random.int(0..<8)
                return pick < 2 ? UInt8(random.int(0..<256)) : [0x1F, 0x20, 0x21, 0x22, 0x5C, 0x5D][pick - 2]
            }
            let marks = ByteLanes.special(word(bytes))
            #expect(ByteLanes.firstMarked(marks) == firstSpecial(bytes), "\(bytes)")
            #expect((marks == 0) == (firstSpecial(bytes) == 8), "\(bytes)")
        }
    }

    @Test("equal and zero mark the first matching lane exactly")
    func equalAndZero() {
        for lane in 0..<8 {
            var bytes = Array("abcdefgh".utf8)
            bytes[lane] = UInt8(ascii: "\"")
            #expect(ByteLanes.firstMarked(ByteLanes.equal(word(bytes), UInt8(ascii: "\""))) == lane)
            bytes[lane] = 0
            #expect(ByteLanes.firstMarked(ByteLanes.zero(word(bytes))) == lane)
        }
        #expect(ByteLanes.zero(word(Array("abcdefgh".utf8))) == 0)
    }
}
