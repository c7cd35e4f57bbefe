import Foundation
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// Chains of combinators over remote promises, each over the previous one's
/// id: settled, cancelled from either end, and restored with a timeout on
/// their root, they run in a loop, whatever their length.
@Suite("Registry: chains of combinators", .serialized)
struct RegistryCombinatorChainTests {
    static let kinds = ["all", "any", "race", "allSettled"]
    /// Links of each chain: past the ~6,000 at which a settle that recursed
    /// once per link overflowed the daemon's stack. Under ThreadSanitizer
    /// (`make test-tsan` sets `PROMISE_TESTS_UNDER_TSAN`), which looks for
    /// races rather than depth, an eighth.
    static let scale = ProcessInfo.processInfo.environment["PROMISE_TESTS_UNDER_TSAN"] == nil ? 1 : 8
    static let length = 8_000 / scale

    /// `root` and a chain of `length` `kind` combinators over it, `kind0` … `kindN-1`;
    /// returns the last id.
    @discardableResult
    private func chain(_ kind: String, on harness: RPCHarness, from peer: RPCFakePeer, rootTimeoutMs: Int? = nil)
        -> String
    {
        harness.call("create", rootTimeoutMs.map { ["id": "root", "timeoutMs": .int($0)] } ?? ["id": "root"], from: peer)
        var previous = "root"
        for index in 0..<Self.length {
            let id = "\(kind)\(index)"
            harness.call(kind, ["ids": [.string(previous)], "id": .string(id)], from: peer)
            previous = id
        }
        return previous
    }

    @Test("a chain of 8,000 combinators settles to its end when its root is resolved", arguments: kinds)
    func chainSettles(kind: String) {
        let harness = RPCHarness()
        let peer = harness.connect()
        let end = chain(kind, on: harness, from: peer)
        harness.call("resolve", ["id": "root", "value": 1], from: peer)
        let record = harness.record(end, from: peer)
        switch kind {
        case "any", "race":
            #expect(record["value"] == 1)
        case "all":
            // Nested one level per link, the value passes maxValueDepth on the way.
            #expect(record["state"] == "rejected")
            #expect(record["reason"]?["code"] == -32004)
        default:
            #expect(record["state"] == "fulfilled")
        }
    }

    @Test("cancelling the end of a chain of 8,000 combinators cancels it up to its root", arguments: kinds)
    func cancellingEnd(kind: String) {
        let harness = RPCHarness()
        let peer = harness.connect()
        let end = chain(kind, on: harness, from: peer)
        harness.call("cancel", ["id": .string(end)], from: peer)
        #expect(harness.state("root", from: peer) == "cancelled")
        #expect(harness.state("\(kind)0", from: peer) == "cancelled")
    }

    @Test("cancelling the root of a chain of 8,000 combinators settles its end", arguments: kinds)
    func cancellingRoot(kind: String) {
        let harness = RPCHarness()
        let peer = harness.connect()
        let end = chain(kind, on: harness, from: peer)
        harness.call("cancel", ["id": "root"], from: peer)
        #expect(harness.state("root", from: peer) == "cancelled")
        #expect(harness.state(end, from: peer) != "pending")
    }

    @Test("a chain of 8,000 combinators over a root whose timeout passed settles after a restart",
          arguments: kinds)
    func restoredChainTimesOut(kind: String) throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        first.registry.now = { 1_000_000 }
        let peer = first.connect()
        let end = chain(kind, on: first, from: peer, rootTimeoutMs: 100)
        first.settleStore()

        let second = RPCHarness(store: store)
        second.registry.now = { 1_000_600 }
        second.registry.restore(try store.load())
        second.settleStore()
        second.loop.advance(by: 0)
        second.settleStore()
        let client = second.connect()
        #expect(second.record("root", from: client)["reason"]?["code"] == -32005)
        #expect(second.state(end, from: client) != "pending")
        #expect(store[end]?.state != .pending)
    }

    @Test("cancelling an all over one pending id repeated 100,000 times cancels that id")
    func cancellingRepeatedInput() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "one"], from: peer)
        let ids = JSONValue.array(Array(repeating: "one", count: 100_000 / Self.scale))
        harness.call("all", ["ids": ids, "id": "many"], from: peer)
        harness.call("cancel", ["id": "many"], from: peer)
        #expect(harness.state("one", from: peer) == "cancelled")
        #expect(harness.state("many", from: peer) == "cancelled")
    }
}
