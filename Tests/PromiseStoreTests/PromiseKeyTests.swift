import PromiseJSON
@testable import PromiseModel
@testable import PromiseStore
import Testing

/// Ids are compared by code points: "é" (U+00E9) and "e" + U+0301 are two
/// ids, though Swift Strings call them equal.
@Suite("Promise ids compared by code points")
struct PromiseKeyTests {
    private let precomposed = "caf\u{E9}"
    private let decomposed = "cafe\u{301}"

    @Test("keys equal only byte for byte, and hash apart when they differ")
    func keysCompareBytes() {
        #expect(precomposed == decomposed)
        #expect(PromiseKey(precomposed) != PromiseKey(decomposed))
        #expect(PromiseKey(precomposed) == PromiseKey("caf\u{E9}"))
        var map = PromiseMap<Int>()
        map[precomposed] = 1
        map[decomposed, default: 0] += 2
        #expect(map.count == 2)
        #expect(map[precomposed] == 1)
        #expect(map[decomposed] == 2)
        var set: PromiseIDSet = [precomposed]
        #expect(set.insert(decomposed).inserted)
        #expect(set.remove(precomposed) == precomposed)
        #expect(Array(set) == [decomposed])
    }
}
