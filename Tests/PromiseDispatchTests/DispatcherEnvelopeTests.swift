import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseDispatch
import PromiseRegistry
import Testing

@Suite("Dispatcher: JSON-RPC 2.0 envelope")
struct DispatcherEnvelopeTests {
    @Test("a request is answered with a compact response carrying its id")
    func requestAnswered() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(#"{"jsonrpc":"2.0","id":"abc","method":"create","params":{"id":"a"}}"#, from: peer)
        #expect(peer.sent.count == 1)
        let text = String(decoding: peer.sent[0], as: UTF8.self)
        #expect(!text.contains(" ") && !text.contains("\n"))
        let message = try JSONValue(parsing: peer.sent[0])
        #expect(message["jsonrpc"] == "2.0")
        #expect(message["id"] == "abc")
        #expect(message["result"]?["id"] == "a")
        #expect(message["error"] == nil)
    }

    @Test("a line that is not JSON gets -32700 with a null id, and the connection stays usable")
    func parseError() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(#"{"jsonrpc":"2.0","id":1,"method":"#, from: peer)
        harness.send("not json at all", from: peer)
        let messages = peer.takeMessages()
        #expect(messages.count == 2)
        for message in messages {
            #expect(message["id"] == .null)
            #expect(message["error"]?["code"] == -32700)
        }
        #expect(harness.call("create", ["id": "still-works"], from: peer)["state"] == "pending")
    }

    @Test("invalid UTF-8 is a parse error")
    func invalidUTF8() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.dispatcher.handle(line: [0x22, 0xFF, 0xFE, 0x22], from: peer)
        #expect(peer.takeMessages().first?["error"]?["code"] == -32700)
    }

    @Test("blank lines are ignored")
    func blankLines() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send("", from: peer)
        harness.send("  \t ", from: peer)
        #expect(peer.sent.isEmpty)
    }

    @Test("a JSON value that is neither an object nor an array gets -32600 with a null id",
          arguments: ["1", "\"create\"", "null", "true"])
    func notARequest(line: String) {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(line, from: peer)
        let messages = peer.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?["id"] == .null)
        #expect(messages.first?["error"]?["code"] == -32600)
    }

    @Test("malformed request objects get -32600, answered to their id when it can be read",
          arguments: [
              (#"{"id":1,"method":"info"}"#, JSONValue.int(1)),                     // no jsonrpc
              (#"{"jsonrpc":"1.0","id":2,"method":"info"}"#, .int(2)),             // wrong version
              (#"{"jsonrpc":"2.0","id":3}"#, .int(3)),                             // no method
              (#"{"jsonrpc":"2.0","id":"x","method":7}"#, .string("x")),           // method not a string
              (#"{"jsonrpc":"2.0","id":{"a":1},"method":"info"}"#, .null),         // id an object
              (#"{"jsonrpc":"2.0","id":[1],"method":"info"}"#, .null),             // id an array
              (#"{"jsonrpc":"2.0","method":1}"#, .null),                           // invalid, even without id
          ])
    func malformedRequest(line: String, id: JSONValue) {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(line, from: peer)
        let messages = peer.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?["id"] == id)
        #expect(messages.first?["error"]?["code"] == -32600)
    }

    @Test("a null id is a request, answered with a null id")
    func nullID() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(#"{"jsonrpc":"2.0","id":null,"method":"info"}"#, from: peer)
        let messages = peer.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?["id"] == .null)
        #expect(messages.first?["result"]?["protocol"] == 1)
    }

    @Test("params that are not an object get -32602", arguments: [#"["a"]"#, "7", #""a""#, "true"])
    func positionalParams(params: String) {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(#"{"jsonrpc":"2.0","id":5,"method":"create","params":"# + params + "}", from: peer)
        let messages = peer.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?["id"] == 5)
        #expect(messages.first?["error"]?["code"] == -32602)
        #expect(harness.registry.count == 0)
    }

    @Test("absent and null params read as no params")
    func absentParams() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(#"{"jsonrpc":"2.0","id":1,"method":"create"}"#, from: peer)
        #expect(peer.takeMessages().first?["result"]?["state"] == "pending")
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"create","params":null}"#, from: peer)
        #expect(peer.takeMessages().first?["result"]?["state"] == "pending")
    }

    @Test("an unknown method gets -32601 naming it")
    func unknownMethod() {
        let harness = RPCHarness()
        let peer = harness.connect()
        let message = harness.answer("frobnicate", [:], from: peer)
        #expect(message["error"]?["code"] == -32601)
        #expect(message["error"]?["data"]?["method"] == "frobnicate")
    }

    @Test("a notification is executed and never answered, even when it fails")
    func notifications() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.notify("create", ["id": "quiet"], from: peer)
        harness.notify("resolve", ["id": "quiet", "value": 3], from: peer)
        harness.notify("resolve", ["id": "quiet", "value": 4], from: peer)    // already settled
        harness.notify("nonsense", [:], from: peer)                          // unknown method
        harness.send(#"{"jsonrpc":"2.0","method":"create","params":[1]}"#, from: peer)  // bad params
        #expect(peer.sent.isEmpty)
        #expect(harness.record("quiet", from: peer)["value"] == 3)
    }

    @Test("a batch is answered by one array holding the answers to its requests, in order")
    func batch() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(
            """
            [{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"a"}},
             {"jsonrpc":"2.0","method":"create","params":{"id":"b"}},
             {"jsonrpc":"2.0","id":2,"method":"nope"},
             1,
             {"jsonrpc":"2.0","id":3,"method":"resolve","params":{"id":"b","value":true}}]
            """, from: peer)
        let messages = peer.takeMessages()
        #expect(messages.count == 1)
        let answers = try #require(messages.first?.arrayValue)
        #expect(answers.count == 4)
        #expect(answers[0]["id"] == 1 && answers[0]["result"]?["id"] == "a")
        #expect(answers[1]["id"] == 2 && answers[1]["error"]?["code"] == -32601)
        #expect(answers[2]["id"] == .null && answers[2]["error"]?["code"] == -32600)
        #expect(answers[3]["id"] == 3 && answers[3]["result"]?["state"] == "fulfilled")
    }

    @Test("a batch of notifications only is not answered")
    func batchOfNotifications() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(#"[{"jsonrpc":"2.0","method":"create","params":{"id":"a"}},{"jsonrpc":"2.0","method":"create"}]"#, from: peer)
        #expect(peer.sent.isEmpty)
        #expect(harness.registry.count == 2)
    }

    @Test("an empty batch gets one -32600 error")
    func emptyBatch() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send("[]", from: peer)
        let messages = peer.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?["id"] == .null)
        #expect(messages.first?["error"]?["code"] == -32600)
    }

    @Test("a batch over maxBatchSize gets one -32004 error and runs nothing")
    func batchTooLarge() {
        var limits = DaemonLimits()
        limits.maxBatchSize = 2
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        let create = #"{"jsonrpc":"2.0","id":1,"method":"create"}"#
        harness.send("[\(create),\(create),\(create)]", from: peer)
        let messages = peer.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?["error"]?["code"] == -32004)
        #expect(harness.registry.count == 0)
        harness.send("[\(create),\(create)]", from: peer)
        #expect(peer.takeMessages().first?.arrayValue?.count == 2)
    }

    @Test("a batch holding a wait is answered once the wait is")
    func batchWithWait() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let other = harness.connect()
        harness.send(
            #"[{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"a"}},{"jsonrpc":"2.0","id":2,"method":"wait","params":{"id":"a"}}]"#,
            from: peer)
        #expect(peer.sent.isEmpty)
        harness.call("resolve", ["id": "a", "value": "done"], from: other)
        let answers = try #require(peer.takeMessages().first?.arrayValue)
        #expect(answers.count == 2)
        #expect(answers[1]["id"] == 2 && answers[1]["result"]?["value"] == "done")
    }

    @Test("answers to requests on one connection may come out of order; each carries its own id")
    func outOfOrder() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "slow"], from: peer)
        let waitID = harness.request("wait", ["id": "slow"], from: peer)
        let infoID = harness.request("info", [:], from: peer)
        harness.call("resolve", ["id": "slow", "value": 1], from: peer)
        let ids = peer.messages.compactMap { $0["id"]?.intValue }
        let waitIndex = ids.firstIndex(of: waitID) ?? -1
        let infoIndex = ids.firstIndex(of: infoID) ?? -1
        #expect(infoIndex >= 0 && waitIndex > infoIndex)
    }

    @Test("a closed connection gets nothing more, and closing twice is harmless")
    func closedConnection() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.request("wait", ["id": "a"], from: peer)
        let count = peer.sent.count
        harness.close(peer)
        harness.close(peer)
        let other = harness.connect()
        harness.call("resolve", ["id": "a"], from: other)
        #expect(peer.sent.count == count)
    }

    @Test("info counts open connections")
    func infoConnections() {
        let harness = RPCHarness()
        let first = harness.connect()
        let second = harness.connect()
        #expect(harness.call("info", from: first)["connections"] == 2)
        harness.close(second)
        #expect(harness.call("info", from: first)["connections"] == 1)
        #expect(harness.dispatcher.connectionCount == 1)
    }

    @Test("a method that fails unexpectedly gets -32603 and the connection stays usable")
    func internalError() {
        let harness = RPCHarness()
        // A peer the server never announced: the registry has no session for it.
        let stranger = RPCFakePeer(connectionID: 99)
        harness.send(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"ids":["a"]}}"#, from: stranger)
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"create","params":{"id":"a"}}"#, from: stranger)
        let messages = stranger.takeMessages()
        #expect(messages.first?["error"]?["code"] == -32603)
        #expect(messages.last?["result"]?["id"] == "a")
    }
}
