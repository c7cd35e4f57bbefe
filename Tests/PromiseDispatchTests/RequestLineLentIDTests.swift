@testable import PromiseJSON
import Testing

/// Promises settled through the dispatcher by an id lent from the line
/// (how the line lends it is in PromiseRPCTests).
@Suite("Request lines: ids of resolve and reject lent from the line, through the dispatcher")
struct RequestLineLentIDTests {
    /// An id long enough to be lent.
    private static let long = "cpinned.r3.12-100000"

    @Test("resolve and reject by a lent id settle the promise, and name a missing one in their error")
    func throughTheDispatcher() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let ids = [Self.long, "cpinned.r3.12-100001"]
        for id in ids { _ = harness.call("create", ["id": .string(id)], from: peer) }
        _ = peer.takeMessages()
        harness.send(#"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"id":"\#(ids[0])","value":[7]}}"#, from: peer)
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"reject","params":{"id":"\#(ids[1])"}}"#, from: peer)
        harness.send(#"{"jsonrpc":"2.0","id":3,"method":"resolve","params":{"id":"no.such.promise.here"}}"#, from: peer)
        let answers = peer.takeMessages()
        try #require(answers.count == 3)
        #expect(answers[0]["result"]?["id"] == .string(ids[0]))
        #expect(answers[0]["result"]?["value"] == [7])
        #expect(answers[1]["result"]?["state"] == "rejected")
        #expect(answers[2]["error"]?["code"] == -32001)
        #expect(answers[2]["error"]?["data"]?["id"] == "no.such.promise.here")
        #expect(answers[2]["error"]?["message"] == #"no promise with id "no.such.promise.here""#)
        #expect(harness.state(ids[0], from: peer) == "fulfilled")
        #expect(harness.state(ids[1], from: peer) == "rejected")
    }
}
