@testable import PromiseJSON
import Testing

/// However a method's name is written, the dispatcher runs the method it
/// names (how the parser tells it is in PromiseRPCTests).
@Suite("Methods told from their bytes, run by the dispatcher")
struct RPCMethodTests {
    @Test("the dispatcher runs a method however it is written, and names an unknown one in its -32601")
    func dispatcherPicksByMethod() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(#"{"jsonrpc":"2.0","id":1,"method":"cr\u0065ate","params":{"id":"a"}}"#, from: peer)
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"resolve","params":{"value":5,"id":"a"}}"#, from: peer)
        harness.send(#"{"jsonrpc":"2.0","id":3,"method":"creates","params":{"id":"b"}}"#, from: peer)
        harness.send(#"{"jsonrpc":"2.0","id":4,"method":"pool.set","params":{"pool":"p","limit":2}}"#, from: peer)
        let messages = peer.takeMessages()
        #expect(messages.count == 4)
        #expect(messages[0]["result"]?["state"] == "pending")
        #expect(messages[1]["result"]?["state"] == "fulfilled")
        #expect(messages[1]["result"]?["value"] == 5)
        #expect(messages[2]["error"]?["code"] == -32601)
        #expect(messages[2]["error"]?["message"] == #"method "creates" not found"#)
        #expect(messages[2]["error"]?["data"]?["method"] == "creates")
        #expect(messages[3]["error"] == nil)
    }
}
