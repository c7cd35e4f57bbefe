@testable import PromiseRPC
import Testing

/// Large values are written as JSON text once and shared by the answers,
/// waits and notifications that carry them.
@Suite("Value text cache")
struct ValueTextCacheTests {
    private let large = JSONValue.string(String(repeating: "v", count: ValueTextCache.threshold))

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
}
