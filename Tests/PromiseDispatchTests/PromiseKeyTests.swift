import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
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

    @Test("a decomposed id is another promise than its precomposed twin: create, settle, get and wait keep them apart")
    func registryKeepsSpellingsApart() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": .string(precomposed)], from: peer)
        harness.call("create", ["id": .string(decomposed)], from: peer)
        harness.call("resolve", ["id": .string(decomposed), "value": "decomposed"], from: peer)
        #expect(harness.state(precomposed, from: peer) == "pending")
        #expect(harness.record(decomposed, from: peer)["value"] == "decomposed")
        #expect(harness.call("info", from: peer)["promises"] == 2)
    }

    @Test("both spellings changed in one turn are both stored")
    func journalWritesBothSpellings() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        let peer = harness.connect()
        harness.call("create", ["id": .string(precomposed)], from: peer)
        harness.call("create", ["id": .string(decomposed)], from: peer)
        harness.settleStore()
        let ids = try store.load().promises.map(\.id)
        #expect(ids.count == 2)
        #expect(ids.contains { $0.utf8.elementsEqual(precomposed.utf8) })
        #expect(ids.contains { $0.utf8.elementsEqual(decomposed.utf8) })
    }
}
