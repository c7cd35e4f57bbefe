import Foundation
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// A settled promise that a pending one still needs (a `then` parent, a
/// combinator's input) stays, in memory and in the store, until that one
/// settles: a restart must be able to rebuild what is pending.
@Suite("Registry: what pending promises still need")
struct RegistryDependentsTests {
    /// A registry restarted from `store`.
    private func restart(from store: MemoryPromiseStore) throws -> RPCHarness {
        let harness = RPCHarness(store: store)
        harness.registry.restore(try store.load())
        harness.settleStore()
        return harness
    }

    @Test("forget keeps a settled input of a pending all and lists it as needed; a restart then settles the all")
    func forgetKeepsNeededInput() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        first.call("create", ["id": "a"], from: peer)
        first.call("create", ["id": "b"], from: peer)
        first.call("all", ["ids": ["a", "b"], "id": "x"], from: peer)
        first.call("resolve", ["id": "a", "value": "A"], from: peer)
        let answer = first.call("forget", ["ids": ["a", "b"]], from: peer)
        #expect(answer == ["forgotten": 0, "pending": ["b"], "needed": ["a"]])
        first.settleStore()
        #expect(store["a"]?.value == "A")

        let second = try restart(from: store)
        let client = second.connect()
        second.call("resolve", ["id": "b", "value": "B"], from: client)
        #expect(second.record("x", from: client)["value"] == ["A", "B"])
        // Nothing needs it any more: it goes.
        #expect(second.call("forget", ["ids": ["a"]], from: client) == ["forgotten": 1, "pending": [], "needed": []])
    }

    @Test("an input named twice is needed until its combinator settles, not until the first of its uses ends")
    func duplicatedInputIsCountedPerUse() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("create", ["id": "b"], from: peer)
        harness.call("all", ["ids": ["a", "a", "b"], "id": "x"], from: peer)
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        #expect(harness.call("forget", ["ids": ["a"]], from: peer)["needed"] == ["a"])
        harness.call("resolve", ["id": "b", "value": 2], from: peer)
        #expect(harness.record("x", from: peer)["value"] == [1, 1, 2])
        #expect(harness.call("forget", ["ids": ["a"]], from: peer)["forgotten"] == 1)
    }

    @Test("forget keeps a settled input while its combinator is pending; cancelling the combinator frees it")
    func cancellingTheCombinatorFreesItsInput() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "gate"], from: peer)
        harness.call("create", ["id": "src"], from: peer)
        harness.call("then", ["id": "gate", "childId": "job"], from: peer)
        harness.call("resolve", ["id": "src", "value": 1], from: peer)
        harness.call("all", ["ids": ["src", "gate"], "id": "both"], from: peer)
        #expect(harness.call("forget", ["ids": ["src"]], from: peer)["needed"] == ["src"])
        harness.call("cancel", ["id": "both"], from: peer)
        #expect(harness.state("both", from: peer) == "cancelled")
        #expect(harness.call("forget", ["ids": ["src"]], from: peer)["forgotten"] == 1)
    }

    @Test("retention keeps an expired input while its combinator is pending, across a restart, and collects it after")
    func retentionKeepsNeededInput() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        var now: Int64 = 10_000
        first.registry.now = { now }
        first.registry.retain(forMilliseconds: 1000)
        let peer = first.connect()
        first.call("create", ["id": "a"], from: peer)
        first.call("create", ["id": "b"], from: peer)
        first.call("create", ["id": "lone"], from: peer)
        first.call("all", ["ids": ["a", "b"], "id": "x"], from: peer)
        first.call("resolve", ["id": "a", "value": "A"], from: peer)
        first.call("resolve", ["id": "lone", "value": 0], from: peer)
        now += 5_000
        first.loop.advance(by: 500)
        first.settleStore()
        #expect(first.errorCode("get", ["id": "lone"], from: peer) == -32001)
        #expect(first.state("a", from: peer) == "fulfilled")
        #expect(store["a"] != nil)

        let second = try restart(from: store)
        second.registry.now = { now }
        second.registry.retain(forMilliseconds: 1000)
        let client = second.connect()
        second.loop.advance(by: 500)
        #expect(second.state("a", from: client) == "fulfilled")
        second.call("resolve", ["id": "b", "value": "B"], from: client)
        #expect(second.record("x", from: client)["value"] == ["A", "B"])
        now += 5_000
        second.loop.advance(by: 500)
        second.settleStore()
        #expect(second.errorCode("get", ["id": "a"], from: client) == -32001)
        #expect(store["a"] == nil)
    }

    @Test("at maxPromises, a settled input of a pending combinator does not make room, and is collected once it settles")
    func makeRoomSkipsNeededInput() {
        var limits = DaemonLimits()
        limits.maxPromises = 100
        let harness = RPCHarness(limits: limits)
        var now: Int64 = 10_000
        harness.registry.now = { now }
        harness.registry.retain(forMilliseconds: 60_000)
        let peer = harness.connect()
        harness.call("create", ["id": "input"], from: peer)
        harness.call("resolve", ["id": "input", "value": 1], from: peer)
        harness.call("create", ["id": "gate"], from: peer)
        harness.call("all", ["ids": ["input", "gate"], "id": "x"], from: peer)
        for index in 0..<97 {
            harness.call("create", ["id": .string("done\(index)")], from: peer)
            harness.call("resolve", ["id": .string("done\(index)"), "value": .int(index)], from: peer)
        }
        // 100 held: room for one more and a hundredth of the limit takes the two oldest that may go.
        harness.call("create", ["id": "new"], from: peer)
        #expect(harness.state("input", from: peer) == "fulfilled")
        #expect(harness.errorCode("get", ["id": "done1"], from: peer) == -32001)
        #expect(harness.state("done2", from: peer) == "fulfilled")
        harness.call("resolve", ["id": "gate", "value": 2], from: peer)
        #expect(harness.record("x", from: peer)["value"] == [1, 2])
        now += 120_000
        harness.loop.advance(by: 60_000)
        #expect(harness.errorCode("get", ["id": "input"], from: peer) == -32001)
    }
}
