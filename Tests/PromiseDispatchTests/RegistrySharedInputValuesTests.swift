@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// A fulfilled combinator made of its inputs' values is stored with
/// references to them, not copies, and after a restart has the very same
/// value, sharing its inputs' storage again.
@Suite("Registry: combined values stored as references")
struct RegistrySharedInputValuesTests {
    private let big = JSONValue.string(String(repeating: "v", count: 100_000))
    private let other = JSONValue.string(String(repeating: "o", count: 300))

    /// Whether two string values use the same bytes in memory (one copy).
    private func sameStorage(_ first: JSONValue?, _ second: JSONValue?) -> Bool {
        guard case .string(var left)? = first, case .string(var right)? = second else { return false }
        return left.withUTF8 { leftBytes in right.withUTF8 { $0.baseAddress == leftBytes.baseAddress } }
    }

    /// A registry restored from `store`, each row read back from its JSON
    /// document as the SQLite store reads it.
    private func restart(from store: MemoryPromiseStore, retainMilliseconds: Int64? = nil,
                         now: (() -> Int64)? = nil) throws -> RPCHarness {
        var contents = try store.load()
        contents.promises = try contents.promises.map { try StoredPromise(json: $0.json) }
        let harness = RPCHarness(store: store)
        if let now { harness.registry.now = now }
        if let retainMilliseconds { harness.registry.retain(forMilliseconds: retainMilliseconds) }
        harness.registry.restore(contents)
        harness.settleStore()
        return harness
    }

    /// The value `id` holds in `harness`'s registry.
    private func value(_ id: String, in harness: RPCHarness) -> JSONValue? {
        harness.registry.entries[id]?.result.flatMap { try? $0.get() }
    }

    /// Creates and settles the inputs: `big` and `other` fulfilled, `failing` rejected.
    private func makeInputs(_ harness: RPCHarness, _ peer: RPCFakePeer) {
        harness.call("create", ["id": "big"], from: peer)
        harness.call("resolve", ["id": "big", "value": big], from: peer)
        harness.call("create", ["id": "other"], from: peer)
        harness.call("resolve", ["id": "other", "value": other], from: peer)
        harness.call("create", ["id": "failing"], from: peer)
        harness.call("reject", ["id": "failing", "reason": "no"], from: peer)
    }

    @Test("all, any, race and allSettled over a large value store references to their inputs, and restore the same values sharing their storage")
    func fourCombinatorsStoreReferences() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        makeInputs(first, peer)
        first.call("all", ["ids": .array(Array(repeating: "big", count: 80)), "id": "all"], from: peer)
        first.call("any", ["ids": ["failing", "big"], "id": "any"], from: peer)
        first.call("race", ["ids": ["other", "big"], "id": "race"], from: peer)
        first.call("allSettled", ["ids": ["big", "failing", "other"], "id": "settled"], from: peer)
        first.settleStore()
        let ids = ["all", "any", "race", "settled"]
        let before = ids.map { first.record($0, from: peer)["value"] }

        let all = try #require(store["all"])
        #expect(all.value == nil)
        #expect(all.valueOfInputs == Array(0..<80))
        #expect(all.serializedJSON().count < 2_000)
        #expect(store["any"]?.valueOfInputs == [1])
        #expect(store["any"]?.value == nil)
        #expect(store["race"]?.valueOfInputs == [0])
        let settled = try #require(store["settled"])
        #expect(settled.valueOfInputs == [0, nil, 2])
        #expect(settled.value?.arrayValue?.count == 3)
        #expect(settled.value?.arrayValue?[1]["state"] == "rejected")
        #expect(settled.serializedJSON().count < 1_000)

        let second = try restart(from: store)
        let client = second.connect()
        #expect(ids.map { second.record($0, from: client)["value"] } == before)
        let restoredBig = value("big", in: second)
        #expect(sameStorage(value("all", in: second)?.arrayValue?[79], restoredBig))
        #expect(sameStorage(value("any", in: second), restoredBig))
        #expect(sameStorage(value("settled", in: second)?.arrayValue?[0]["value"], restoredBig))
        // Written again after the restart, still as references.
        let again = second.registry.storedPromises(ids)
        #expect(again.map(\.valueOfInputs) == ids.map { store[$0]?.valueOfInputs })
        #expect(again.map(\.value) == ids.map { store[$0]?.value })
    }

    @Test("combinators over combinators, and a then child of one, restore the same values across two restarts")
    func nestedCombinatorsRestore() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        makeInputs(first, peer)
        first.call("all", ["ids": ["big", "other", "big"], "id": "inner"], from: peer)
        first.call("allSettled", ["ids": ["inner", "failing", "inner"], "id": "middle"], from: peer)
        first.call("any", ["ids": ["failing", "middle"], "id": "outer"], from: peer)
        first.call("race", ["ids": ["outer", "inner"], "id": "top"], from: peer)
        first.call("then", ["id": "middle", "childId": "child"], from: peer)
        first.settleStore()
        let ids = ["inner", "middle", "outer", "top", "child"]
        let before = ids.map { first.record($0, from: peer)["value"] }
        #expect(store["middle"]?.valueOfInputs == [0, nil, 2])
        #expect(store["outer"]?.valueOfInputs == [1])
        #expect(store["top"]?.valueOfInputs == [0])
        #expect(store["child"]?.valueOfParent == true)
        let storedBytes = ids.compactMap { store[$0]?.serializedJSON().count }.reduce(0, +)
        #expect(storedBytes < 3_000)

        let second = try restart(from: store)
        #expect(ids.map { second.record($0, from: second.connect())["value"] } == before)
        let third = try restart(from: store)
        #expect(ids.map { third.record($0, from: third.connect())["value"] } == before)
        // top is outer is middle: [{"id":"inner","value":[big, other, big]…}, …].
        let innerOfTop = value("top", in: third)?.arrayValue?.first?["value"]
        #expect(sameStorage(innerOfTop?.arrayValue?.first, value("big", in: third)))
    }

    @Test("an all with the nulls or ignore-errors policy refers to its fulfilled inputs and keeps the rest in place")
    func policiesReferFulfilledInputs() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        makeInputs(first, peer)
        first.call("all", ["ids": ["big", "failing", "other"], "policy": "nulls", "id": "nulls"], from: peer)
        first.call("all", ["ids": ["failing", "big", "failing", "other"], "policy": "ignore-errors", "id": "kept"],
                   from: peer)
        first.settleStore()
        #expect(store["nulls"]?.valueOfInputs == [0, nil, 2])
        #expect(store["nulls"]?.value == [nil, nil, nil])
        #expect(store["kept"]?.valueOfInputs == [1, 3])
        #expect(store["kept"]?.value == nil)
        let second = try restart(from: store)
        let client = second.connect()
        #expect(second.record("nulls", from: client)["value"] == [big, nil, other])
        #expect(second.record("kept", from: client)["value"] == [big, other])
    }

    @Test("small values are stored in place and keep no input from being forgotten")
    func smallValuesInPlace() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        let peer = harness.connect()
        harness.call("create", ["id": "small"], from: peer)
        harness.call("resolve", ["id": "small", "value": "short"], from: peer)
        harness.call("all", ["ids": ["small", "small"], "id": "both"], from: peer)
        harness.settleStore()
        #expect(store["both"]?.valueOfInputs == nil)
        #expect(store["both"]?.value == ["short", "short"])
        #expect(harness.call("forget", ["ids": ["small"]], from: peer)["forgotten"] == 1)
    }

    @Test("an input whose value a combinator refers to is kept by forget until the combinator is forgotten")
    func forgetKeepsReferencedInputs() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        let peer = harness.connect()
        makeInputs(harness, peer)
        harness.call("all", ["ids": ["big", "big"], "id": "twice"], from: peer)
        harness.settleStore()
        #expect(harness.call("forget", ["ids": ["big"]], from: peer)["needed"] == ["big"])
        #expect(harness.call("forget", ["ids": ["twice", "big"]], from: peer)["forgotten"] == 2)
        harness.settleStore()
        #expect(store["big"] == nil)
        #expect(store["twice"] == nil)
    }

    @Test("an input past its retention period is kept while the combinator referring to it is held, across a restart, then both go")
    func retentionKeepsReferencedInputs() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        var now: Int64 = 10_000
        first.registry.now = { now }
        first.registry.retain(forMilliseconds: 1_000)
        let peer = first.connect()
        first.call("create", ["id": "big"], from: peer)
        first.call("resolve", ["id": "big", "value": big], from: peer)
        now += 900
        first.call("all", ["ids": ["big", "big"], "id": "pair"], from: peer)
        now += 600
        first.loop.advance(by: 500)
        first.settleStore()
        #expect(first.state("big", from: peer) == "fulfilled")
        #expect(store["big"] != nil)
        #expect(store["pair"]?.valueOfInputs == [0, 1])

        let second = try restart(from: store, retainMilliseconds: 1_000, now: { now })
        let client = second.connect()
        second.loop.advance(by: 500)
        #expect(second.record("pair", from: client)["value"] == [big, big])
        now += 5_000
        for _ in 0..<3 { second.loop.advance(by: 500) }
        second.settleStore()
        #expect(try store.load().promises.isEmpty)
    }

    @Test("a combinator whose referenced input is missing, or whose references do not fit, is rejected at start-up saying so")
    func missingInputIsRejected() throws {
        let input = StoredPromise(id: "big", sequence: 1, kind: .created, created: 1, settled: 1, state: .fulfilled,
                                  value: big)
        let orphan = StoredPromise(id: "orphan", sequence: 2, kind: .combinator(.all), inputIDs: ["gone", "big"], created: 2,
                                   settled: 2, state: .fulfilled, valueOfInputs: [0, 1])
        let misfit = StoredPromise(id: "misfit", sequence: 3, kind: .combinator(.all), inputIDs: ["big"], created: 3,
                                   settled: 3, state: .fulfilled, valueOfInputs: [4])
        let store = MemoryPromiseStore([input, orphan, misfit])
        let harness = try restart(from: store)
        let peer = harness.connect()
        let orphanRecord = harness.record("orphan", from: peer)
        #expect(orphanRecord["state"] == "rejected")
        #expect(orphanRecord["reason"]?["message"]
                    == "cannot be restored: it had the value of its input \"gone\", which is no longer stored")
        let misfitRecord = harness.record("misfit", from: peer)
        #expect(misfitRecord["state"] == "rejected")
        #expect(misfitRecord["reason"]?["message"]
                    == "cannot be restored: its stored value does not fit its inputs (input 4 of 1)")
        // Settled by the rejection, they no longer hold their inputs.
        #expect(harness.call("forget", ["ids": ["big"]], from: peer)["forgotten"] == 1)
    }
}
