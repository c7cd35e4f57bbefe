@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
@testable import PromiseStore
import Testing

/// Large values are written as JSON text once and shared by the answers,
/// waits and notifications that carry them.
@Suite("Value text cache")
struct ValueTextCacheTests {
    private let large = Self.large("v")

    /// A string value just long enough to be kept.
    private static func large(_ character: Character) -> JSONValue {
        .string(String(repeating: character, count: ValueTextCache.threshold))
    }

    @Test("a large value is written once: later answers copy the kept text, byte for byte what writing it gives")
    func largeValueIsWrittenOnce() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "big"], from: peer)
        harness.call("resolve", ["id": "big", "value": large], from: peer)
        let entry = try #require(harness.registry.entries["big"])
        let first = try #require(harness.registry.valueText(of: entry))
        let second = try #require(harness.registry.valueText(of: entry))
        #expect(first.withUnsafeBufferPointer { $0.baseAddress } == second.withUnsafeBufferPointer { $0.baseAddress })
        #expect(first == large.serialized())
        #expect(harness.registry.valueTexts.bytes == first.count)
        #expect(harness.record("big", from: peer)["value"] == large)
    }

    @Test("a small value is not kept")
    func smallValueIsNotKept() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "small"], from: peer)
        harness.call("resolve", ["id": "small", "value": ["n": 1]], from: peer)
        let entry = try #require(harness.registry.entries["small"])
        #expect(harness.registry.valueText(of: entry) == nil)
        #expect(harness.registry.valueTexts.bytes == 0)
    }

    @Test("a then child that has its parent's value shares the parent's text")
    func childSharesParentText() throws {
        let harness = RPCHarness(store: MemoryPromiseStore())
        let peer = harness.connect()
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("then", ["id": "parent", "childId": "child"], from: peer)
        harness.call("resolve", ["id": "parent", "value": large], from: peer)
        let child = try #require(harness.registry.entries["child"])
        #expect(child.sharesParentValue)
        let childText = try #require(harness.registry.valueText(of: child))
        let parent = try #require(harness.registry.entries["parent"])
        let parentText = try #require(harness.registry.valueText(of: parent))
        #expect(childText.withUnsafeBufferPointer { $0.baseAddress } == parentText.withUnsafeBufferPointer { $0.baseAddress })
        #expect(harness.registry.valueTexts.bytes == parentText.count)
        #expect(harness.record("child", from: peer)["value"] == large)
    }

    @Test("a chain of then children of a fulfilled parent, stored without values of their own, shares the parent's text")
    func chainSharesRootText() throws {
        let harness = RPCHarness(store: MemoryPromiseStore())
        let peer = harness.connect()
        harness.call("create", ["id": "root"], from: peer)
        harness.call("resolve", ["id": "root", "value": large], from: peer)
        let answers = try harness.batchAnswers([
            ("then", ["id": "root", "childId": "c1"]),
            ("then", ["id": "c1", "childId": "c2", "on": "settled"]),
            ("then", ["id": "c2", "childId": "c3", "on": "rejected"]),
        ], from: peer)
        #expect(answers.map { $0["result"]?["value"] } == [large, large, large])
        let root = try #require(harness.registry.entries["root"])
        let rootText = try #require(harness.registry.valueText(of: root))
        for id in ["c1", "c2", "c3"] {
            let child = try #require(harness.registry.entries[id])
            let text = try #require(harness.registry.valueText(of: child))
            #expect(text.withUnsafeBufferPointer { $0.baseAddress } == rootText.withUnsafeBufferPointer { $0.baseAddress })
        }
        #expect(harness.registry.valueTexts.bytes == rootText.count)
    }

    @Test("in memory, a child whose parent was forgotten and made again keeps its own value's text, not the new parent's")
    func childOfRemadeParentKeepsItsValue() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let other = Self.large("n")
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("resolve", ["id": "parent", "value": large], from: peer)
        harness.call("then", ["id": "parent", "childId": "child"], from: peer)
        harness.call("forget", ["ids": ["parent"]], from: peer)
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("resolve", ["id": "parent", "value": other], from: peer)
        try expectValue(of: "child", is: large, in: harness, from: peer)
    }

    @Test("a then child a client resolved keeps the text of its own value, not its parent's")
    func childWithOwnValueKeepsItsText() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let own = Self.large("o")
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("then", ["id": "parent", "childId": "child"], from: peer)
        harness.call("resolve", ["id": "child", "value": own], from: peer)
        harness.call("resolve", ["id": "parent", "value": large], from: peer)
        try expectValue(of: "child", is: own, in: harness, from: peer)
    }

    @Test("a batch of thens of a large value: the first answers carry it, the rest are -32004, every child made, its text kept once")
    func batchOfThensMeasuresTheKeptText() throws {
        var limits = DaemonLimits()
        limits.maxBatchAnswerBytes = 100_000
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "big"], from: peer)
        harness.call("resolve", ["id": "big", "value": large], from: peer)
        let answers = try harness.batchAnswers((0..<50).map { ("then", ["id": "big", "childId": .string("c\($0)")]) }, from: peer)
        #expect(answers.count == 50)
        #expect(answers.first?["result"]?["value"] == large)
        for answer in answers.dropFirst() {
            #expect(answer["error"]?["data"]?["limit"] == "maxBatchAnswerBytes")
        }
        #expect((0..<50).allSatisfy { harness.registry.entries["c\($0)"] != nil })
        #expect(harness.registry.valueTexts.bytes == large.serialized().count)
    }

    @Test("past its budget the cache lets the oldest texts go, and they are written again when asked for")
    func budgetDropsOldest() throws {
        var limits = DaemonLimits()
        // A budget of four values: room for two texts of twice the threshold.
        limits.maxValueBytes = ValueTextCache.threshold
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        let value = JSONValue.string(String(repeating: "w", count: ValueTextCache.threshold * 2 - 2))
        for id in ["a", "b", "c"] {
            harness.call("create", ["id": .string(id)], from: peer)
            harness.call("resolve", ["id": .string(id), "value": value], from: peer)
            let entry = try #require(harness.registry.entries[id])
            _ = harness.registry.valueText(of: entry)
        }
        #expect(harness.registry.entries["a"]?.valueText == nil)
        #expect(harness.registry.entries["b"]?.valueText != nil)
        #expect(harness.registry.entries["c"]?.valueText != nil)
        #expect(harness.registry.valueTexts.bytes <= harness.registry.valueTexts.budget)
        #expect(harness.record("a", from: peer)["value"] == value)
    }

    @Test("every waiter of a large value gets the same answer, the record get gives")
    func waitersShareTheRecord() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let waiters = (0..<3).map { _ in harness.connect() }
        harness.call("create", ["id": "big"], from: peer)
        for waiter in waiters { harness.request("wait", ["id": "big"], from: waiter) }
        harness.call("resolve", ["id": "big", "value": large], from: peer)
        let record = harness.record("big", from: peer)
        for waiter in waiters {
            let line = try #require(waiter.sent.last)
            let answer = try JSONValue(parsing: line)
            #expect(answer["result"] == record)
        }
    }

    /// `id`'s kept text is `value`'s, and its record gives `value`.
    private func expectValue(
        of id: String, is value: JSONValue, in harness: RPCHarness, from peer: RPCFakePeer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let entry = try #require(harness.registry.entries[id], sourceLocation: sourceLocation)
        #expect(harness.registry.valueText(of: entry) == value.serialized(), sourceLocation: sourceLocation)
        #expect(harness.record(id, from: peer, sourceLocation: sourceLocation)["value"] == value, sourceLocation: sourceLocation)
    }
}
