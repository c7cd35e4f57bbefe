import Foundation
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
@testable import PromiseStore
import Testing

/// The registry over a store that refuses some changes for good (as SQLite
/// refuses a row too big): the request that made such a change is answered
/// with an error, every other is served as usual.
@Suite("Registry unstorable changes")
struct RegistryUnstorableTests {
    private static let refusal = #"promise "big" cannot be stored: string or blob too big"#

    private func line(_ id: Int, _ method: String, _ params: JSONValue) -> [UInt8] {
        let message: JSONValue = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": params]
        return Array(message.serialized())
    }

    @Test("a request whose change cannot be stored gets -32603 naming the promise; others in the same commit are answered and stored; later changes are accepted")
    func refusedRequestAlone() throws {
        let store = MemoryPromiseStore()
        store.refusedIDs = ["big": "string or blob too big"]
        let harness = RPCHarness(store: store)
        let (alice, bob) = (harness.connect(), harness.connect())
        // One turn of the loop: the three creates are cut and committed together.
        harness.dispatcher.handle(line: line(1, "create", ["id": "a"]), from: alice)
        harness.dispatcher.handle(line: line(2, "create", ["id": "big"]), from: bob)
        harness.dispatcher.handle(line: line(3, "create", ["id": "b"]), from: alice)
        harness.settleStore()

        let answers = alice.takeMessages()
        #expect(answers.map { $0["id"] } == [1, 3])
        #expect(answers.map { $0["result"]?["state"] } == ["pending", "pending"])
        let refused = try #require(bob.takeMessages().first)
        #expect(refused["id"] == 2)
        #expect(refused["result"] == nil)
        #expect(refused["error"]?["code"] == -32603)
        #expect(refused["error"]?["message"] == .string("the store cannot write: " + Self.refusal))
        #expect(refused["error"]?["data"] == ["reason": .string(Self.refusal), "store": "memory"])
        #expect(store["a"] != nil && store["b"] != nil && store["big"] == nil)

        let info = harness.call("info", from: alice)
        #expect(info["store"]?["writable"] == true)
        #expect(info["store"]?["error"] == .null)
        #expect(info["store"]?["unstorable"] == 1)
        harness.call("create", ["id": "after"], from: bob)
        harness.call("resolve", ["id": "a", "value": 1], from: bob)
        #expect(store["after"] != nil)
        #expect(store["a"]?.value == 1)

        // In memory the promise is there; a restart does not know it.
        #expect(harness.state("big", from: alice) == "pending")
        let restarted = RPCHarness(store: store)
        restarted.registry.restore(try store.load())
        #expect(restarted.errorCode("get", ["id": "big"], from: restarted.connect()) == -32001)
    }

    @Test("a settlement that follows from a request and cannot be stored fails that request's answer; its own change is stored")
    func refusedCascadeFailsTheRequest() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        let peer = harness.connect()
        harness.call("create", ["id": "p"], from: peer)
        harness.call("all", ["ids": ["p"], "id": "big"], from: peer)
        store.refusedIDs = ["big": "string or blob too big"]

        let answer = harness.answer("resolve", ["id": "p", "value": 1], from: peer)
        #expect(answer["error"]?["code"] == -32603)
        #expect(answer["error"]?["data"]?["reason"] == .string(Self.refusal))
        #expect(store["p"]?.state == .fulfilled)
        #expect(store["big"]?.state == .pending)
        #expect(harness.state("big", from: peer) == "fulfilled")
        #expect(harness.call("info", from: peer)["store"]?["writable"] == true)
    }

    @Test("a batch line with a change that cannot be stored: its successful answers become -32603, its error answers stay")
    func refusedChangeInABatchLine() throws {
        let store = MemoryPromiseStore()
        store.refusedIDs = ["big": "string or blob too big"]
        let harness = RPCHarness(store: store)
        let peer = harness.connect()
        harness.send(#"[{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"ok"}},"#
            + #"{"jsonrpc":"2.0","id":2,"method":"create","params":{"id":"big"}},"#
            + #"{"jsonrpc":"2.0","id":3,"method":"get","params":{"id":"missing"}}]"#, from: peer)
        let answers = try #require(peer.takeMessages().last?.arrayValue)
        #expect(answers.map { $0["error"]?["code"] } == [-32603, -32603, -32001])
        #expect(store["ok"] != nil)
        #expect(harness.call("info", from: peer)["store"]?["writable"] == true)
    }
}
