@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// A `then` child that has its parent's value is stored without a copy of
/// it, and after a restart shares the parent's value again.
@Suite("Registry: values stored once")
struct RegistrySharedValueTests {
    private let big = JSONValue.string(String(repeating: "v", count: 100_000))

    /// Whether two string values use the same bytes in memory (one copy).
    private func sameStorage(_ first: JSONValue?, _ second: JSONValue?) -> Bool {
        guard case .string(var left)? = first, case .string(var right)? = second else { return false }
        return left.withUTF8 { leftBytes in right.withUTF8 { $0.baseAddress == leftBytes.baseAddress } }
    }

    /// A durable registry over a fresh store, and a client of it.
    private func durable() -> (store: MemoryPromiseStore, harness: RPCHarness, peer: RPCFakePeer) {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        return (store, harness, harness.connect())
    }

    private func restart(from store: MemoryPromiseStore) throws -> RPCHarness {
        let harness = RPCHarness(store: store)
        harness.registry.restore(try store.load())
        harness.settleStore()
        return harness
    }

    @Test("then children of a fulfilled parent are stored without its value, and share it again after a restart")
    func childrenStoreNoCopy() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        first.call("create", ["id": "parent"], from: peer)
        first.call("resolve", ["id": "parent", "value": big], from: peer)
        for index in 0..<20 { first.call("then", ["id": "parent", "childId": .string("child\(index)")], from: peer) }
        first.settleStore()
        let child = try #require(store["child7"])
        #expect(child.state == .fulfilled)
        #expect(child.value == nil)
        #expect(child.valueOfParent)
        #expect(child.serializedJSON().count < 400)
        #expect(store["parent"]?.value == big)

        let second = try restart(from: store)
        let client = second.connect()
        #expect(second.record("child7", from: client)["value"] == big)
        let parentValue = second.registry.entries["parent"]?.result.flatMap { try? $0.get() }
        let childValue = second.registry.entries["child7"]?.result.flatMap { try? $0.get() }
        #expect(sameStorage(parentValue, childValue))
    }

    @Test("a child made before its parent is fulfilled is also stored without the value")
    func pendingChildSharesOnceSettled() throws {
        let (store, harness, peer) = durable()
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("then", ["id": "parent", "childId": "child"], from: peer)
        harness.call("then", ["id": "child", "childId": "grandchild"], from: peer)
        harness.call("resolve", ["id": "parent", "value": big], from: peer)
        harness.settleStore()
        #expect(store["child"]?.valueOfParent == true)
        #expect(store["grandchild"]?.valueOfParent == true)
        let second = try restart(from: store)
        #expect(second.record("grandchild", from: second.connect())["value"] == big)
    }

    @Test("a parent whose value a child shares is kept by forget until the child is forgotten")
    func sharedParentIsNeeded() throws {
        let (store, harness, peer) = durable()
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("resolve", ["id": "parent", "value": 1], from: peer)
        harness.call("then", ["id": "parent", "childId": "child"], from: peer)
        harness.settleStore()
        #expect(harness.call("forget", ["ids": ["parent"]], from: peer)["needed"] == ["parent"])
        #expect(harness.call("forget", ["ids": ["child", "parent"]], from: peer)["forgotten"] == 2)
        harness.settleStore()
        #expect(try store.load().promises.isEmpty)
    }

    @Test("a rejected parent's child, and an exec child's output, keep their own reason and value")
    func onlyInheritedValuesAreShared() throws {
        let (store, harness, peer) = durable()
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("resolve", ["id": "parent", "value": 1], from: peer)
        harness.call("then", ["id": "parent", "childId": "job", "exec": ["cat"]], from: peer)
        harness.loop.processes.last?.exit(0, stdout: "2")
        harness.call("create", ["id": "failing"], from: peer)
        harness.call("reject", ["id": "failing", "reason": "no"], from: peer)
        harness.call("then", ["id": "failing", "childId": "follower", "on": "settled"], from: peer)
        harness.settleStore()
        #expect(store["job"]?.value == 2)
        #expect(store["job"]?.valueOfParent == false)
        #expect(store["follower"]?.state == .rejected)
        #expect(store["follower"]?.valueOfParent == false)
    }

    @Test("a then child resolved by a client before its parent keeps its own value across restarts, resolved in the parent's commit or before it")
    func childResolvedByAClientKeepsItsValue() throws {
        let (store, harness, peer) = durable()
        // The child's resolve and the parent's in one commit (as in a batch
        // line): the parent is fulfilled when the child is first written.
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("then", ["id": "parent", "childId": "child"], from: peer)
        harness.sendBatch([("resolve", ["id": "child", "value": false]), ("resolve", ["id": "parent", "value": [false, nil]])],
                          from: peer)
        #expect(harness.record("child", from: peer)["value"] == false)
        // In two commits: the child is stored before its parent is fulfilled;
        // a grandchild then has the child's own value.
        harness.call("create", ["id": "parent2"], from: peer)
        harness.call("then", ["id": "parent2", "childId": "child2"], from: peer)
        harness.call("resolve", ["id": "child2", "value": "own"], from: peer)
        harness.call("resolve", ["id": "parent2", "value": "parent's"], from: peer)
        harness.call("then", ["id": "child2", "childId": "grandchild2"], from: peer)
        harness.settleStore()
        #expect(store["child"]?.valueOfParent == false)
        #expect(store["child"]?.value == false)
        #expect(store["child2"]?.valueOfParent == false)
        #expect(store["child2"]?.value == "own")
        #expect(store["grandchild2"]?.valueOfParent == true)

        let second = try restart(from: store)
        let client = second.connect()
        #expect(second.record("child", from: client)["value"] == false)
        #expect(second.record("child2", from: client)["value"] == "own")
        #expect(second.record("grandchild2", from: client)["value"] == "own")
        // Back from the store with a value of its own, beside a fulfilled
        // parent: should it be written again, it is not taken for the parent's.
        let restored = try #require(second.registry.entries["child"])
        second.registry.shareParentValue(restored)
        #expect(!restored.sharesParentValue)
    }

    @Test("in memory, a parent is not held back for the children that share its value")
    func inMemoryNothingIsHeldBack() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("resolve", ["id": "parent", "value": 1], from: peer)
        harness.call("then", ["id": "parent", "childId": "child"], from: peer)
        #expect(harness.call("forget", ["ids": ["parent"]], from: peer)["forgotten"] == 1)
    }

    @Test("a child stored as having its parent's value, whose parent is gone, is rejected at start-up, saying so")
    func missingParentRejectsTheChild() throws {
        let store = MemoryPromiseStore([
            StoredPromise(id: "child", sequence: 1, kind: .then, parentID: "gone", on: .fulfilled, created: 1,
                          settled: 2, state: .fulfilled, valueOfParent: true),
        ])
        let harness = try restart(from: store)
        let record = harness.record("child", from: harness.connect())
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["message"]
            == "cannot be restored: it had the value of its parent \"gone\", which is no longer stored")
        #expect(store["child"]?.state == .rejected)
    }
}
