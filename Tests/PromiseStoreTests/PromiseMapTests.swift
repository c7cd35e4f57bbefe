@testable import PromiseModel
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// The registry's own hash table against a `Dictionary` doing the same.
@Suite("PromiseMap")
struct PromiseMapTests {
    @Test("random inserts, updates, appends through default and removals leave it equal to a Dictionary", arguments: [1, 2, 3] as [UInt64])
    func matchesDictionary(seed: UInt64) {
        var generator = SeededRandom(seed: seed)
        var map = PromiseMap<[Int]>()
        // Keyed by bytes, as the map is: a `String` key would take "é" for "e\u{301}".
        var model: [PromiseKey: [Int]] = [:]
        // Few enough ids that they recur: a table that grows, shrinks by
        // removal and reuses slots, with long probe runs at 3/4 full.
        let ids = (0..<600).map { "id.\($0)" } + ["", "é", "e\u{301}", String(repeating: "long", count: 20)]
        for step in 0..<20_000 {
            let id = ids.randomElement(using: &generator)!
            let key = PromiseKey(id)
            switch generator.next() % 5 {
            case 0: map[id] = [step]; model[key] = [step]
            case 1: map[id, default: []].append(step); model[key, default: []].append(step)
            case 2: #expect(map.removeValue(forKey: id) == model.removeValue(forKey: key))
            case 3: #expect(map.updateValue([step], forKey: id) == model.updateValue([step], forKey: key))
            default: map[id]?.append(step); model[key]?.append(step)
            }
            #expect(map.count == model.count)
        }
        for id in ids {
            #expect(map[id] == model[PromiseKey(id)], "id \(id)")
            // Looked up by its bytes, as a lent id is: the same answer.
            let byBytes = Array(id.utf8).withUnsafeBytes { map[bytes: $0] }
            #expect(byBytes == model[PromiseKey(id)], "id \(id) as bytes")
        }
        #expect(Array("e\u{301}x".utf8).withUnsafeBytes { map[bytes: $0] } == nil)
        #expect(map.values.sorted { $0.lexicographicallyPrecedes($1) } == model.values.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test("setting nil through the subscript removes the id, and what probed past it is still found")
    func removalKeepsLaterKeysReachable() {
        var map = PromiseMap<Int>()
        for number in 0..<1_000 { map["k\(number)"] = number }
        for number in stride(from: 0, to: 1_000, by: 2) { map["k\(number)"] = nil }
        #expect(map.count == 500)
        for number in 0..<1_000 { #expect(map["k\(number)"] == (number.isMultiple(of: 2) ? nil : number)) }
    }

    @Test("a table grown to 262,144 slots (100,000 ids, a third then removed) keeps every other id and its value")
    func growsLarge() {
        var map = PromiseMap<Int>()
        let count = 100_000
        for number in 0..<count { map["p\(number)"] = number }
        #expect(map.count == count)
        for number in 0..<count where map["p\(number)"] != number {
            Issue.record("p\(number) is \(String(describing: map["p\(number)"]))")
            break
        }
        for number in stride(from: 0, to: count, by: 3) { map["p\(number)"] = nil }
        #expect(map.count == count - (count + 2) / 3)
        #expect(map["p3"] == nil)
        #expect(map["p4"] == 4)
        #expect(map["p\(count - 1)"] == nil)
        #expect(map["p\(count - 2)"] == count - 2)
    }

    @Test("a value moved out through the default subscript is not copied: appending keeps one buffer")
    func defaultSubscriptModifiesInPlace() {
        var map = PromiseMap<[Int]>()
        map["a", default: []].reserveCapacity(64)
        let before = map["a"]!.withUnsafeBufferPointer { $0.baseAddress }
        for number in 0..<32 { map["a", default: []].append(number) }
        #expect(map["a"]!.withUnsafeBufferPointer { $0.baseAddress } == before)
        #expect(map["a"] == Array(0..<32))
    }

    @Test("the id hash depends on every byte and on the length, and is never 0")
    func hashCoversEveryByte() {
        let base = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)
        for length in 0...base.count {
            let bytes = Array(base.prefix(length))
            let hash = bytes.withUnsafeBytes(IDHash.hash)
            #expect(hash != 0)
            for position in 0..<length {
                var changed = bytes
                changed[position] ^= 1
                #expect(changed.withUnsafeBytes(IDHash.hash) != hash, "length \(length), byte \(position)")
            }
            #expect((bytes + [0]).withUnsafeBytes(IDHash.hash) != hash, "length \(length) against one more zero byte")
        }
    }
}

/// The registry's table of promises, keyed by the ids the promises hold.
@Suite("PromiseIndex")
struct PromiseIndexTests {
    final class Named: PromiseIdentified, Equatable {
        let id: String
        let number: Int
        init(_ id: String, _ number: Int) { (self.id, self.number) = (id, number) }
        static func == (lhs: Named, rhs: Named) -> Bool { lhs === rhs }
    }

    @Test("a slot is a hash and a reference, 16 bytes: half a PromiseMap's")
    func slotIsTwoWords() {
        #expect(MemoryLayout<IdentifiedSlot<Named>>.stride == 16)
        #expect(MemoryLayout<KeyedSlot<Named>>.stride == 32)
    }

    @Test("random inserts, replacements and removals leave it equal to a Dictionary, by id and by bytes", arguments: [1, 2] as [UInt64])
    func matchesDictionary(seed: UInt64) {
        var generator = SeededRandom(seed: seed)
        var index = PromiseIndex<Named>()
        var model: [PromiseKey: Named] = [:]
        let ids = (0..<500).map { "p\($0)" } + ["", "é", "e\u{301}"]
        for step in 0..<20_000 {
            let id = ids.randomElement(using: &generator)!
            let key = PromiseKey(id)
            switch generator.next() % 4 {
            case 0: let named = Named(id, step); index[id] = named; model[key] = named
            case 1: #expect(index.removeValue(forKey: id) == model.removeValue(forKey: key))
            case 2: let named = Named(id, step); #expect(index.updateValue(named, forKey: id) == model.updateValue(named, forKey: key))
            default: index[id] = nil; model[key] = nil
            }
            #expect(index.count == model.count)
        }
        for id in ids {
            #expect(index[id] == model[PromiseKey(id)], "id \(id)")
            #expect(Array(id.utf8).withUnsafeBytes { index[bytes: $0] } == model[PromiseKey(id)], "id \(id) as bytes")
        }
        #expect(Set(index.values.map(ObjectIdentifier.init)) == Set(model.values.map(ObjectIdentifier.init)))
    }

    @Test("a slot is the slot of the id its object holds, by bytes; an empty slot is no id's")
    func slotComparesTheObjectsID() {
        let first = Named("first", 1)
        let slot = IdentifiedSlot(hash: IDHash.hash("first"), key: "first", value: first)
        #expect(slot.hasKey("first"))
        #expect(!slot.hasKey("second"))
        #expect(!slot.hasKey("firsT"))
        #expect(Array("first".utf8).withUnsafeBytes { slot.hasKey(bytes: $0) })
        #expect(!IdentifiedSlot<Named>.empty.hasKey(""))
    }
}
