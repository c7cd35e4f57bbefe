import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry
import PromiseTestSupport
import Testing

@Suite("Registry: create, resolve, reject, cancel, get, progress")
struct RegistryLifecycleTests {
    @Test("create returns a pending record with the pinned fields")
    func createRecord() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let record = harness.call("create", ["id": "build/lib", "name": "the library"], from: peer)
        #expect(record["id"] == "build/lib")
        #expect(record["state"] == "pending")
        #expect(record["parent"] == .null)
        #expect(record["name"] == "the library")
        #expect(record["value"] == nil)
        #expect(record["reason"] == nil)
        #expect(record["children"] == [])
        #expect(record["progress"]?.doubleValue == 0)
        #expect(record["created"]?.intValue != nil)
        #expect(record["settled"] == .null)
    }

    @Test("create without an id makes a fresh id each time")
    func generatedIDs() {
        let harness = RPCHarness()
        let peer = harness.connect()
        let first = harness.call("create", from: peer)["id"]?.stringValue
        let second = harness.call("create", from: peer)["id"]?.stringValue
        #expect(first != nil && second != nil && first != second)
    }

    @Test("create reads its other params with no id, with a null id, and beside an id")
    func createParamsWithoutID() {
        let harness = RPCHarness()
        let peer = harness.connect()
        #expect(harness.call("create", ["name": "alone"], from: peer)["name"] == "alone")
        let nullID = harness.call("create", ["id": .null, "name": "null id"], from: peer)
        #expect(nullID["name"] == "null id")
        #expect(nullID["id"]?.stringValue != nil)
        #expect(harness.call("create", ["id": .null, "timeoutMs": 60_000], from: peer)["timeoutMs"] == 60_000)
        #expect(harness.errorCode("create", ["name": 5], from: peer) == -32602)
        #expect(harness.errorCode("create", ["id": .null, "lease": "yes"], from: peer) == -32602)
        #expect(harness.errorCode("create", ["id": "c", "ifExists": "replace"], from: peer) == -32602)
    }

    @Test("generated ids skip ids clients already use")
    func generatedIDsSkipTaken() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "p1"], from: peer)
        #expect(harness.call("create", from: peer)["id"] == "p2")
    }

    @Test("create of an existing id gets -32006, or the existing record with ifExists get")
    func ifExists() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a", "name": "first"], from: peer)
        #expect(harness.errorCode("create", ["id": "a"], from: peer) == -32006)
        #expect(harness.errorCode("create", ["id": "a", "ifExists": "error"], from: peer) == -32006)
        let existing = harness.call("create", ["id": "a", "ifExists": "get", "name": "second"], from: peer)
        #expect(existing["name"] == "first")
        #expect(harness.errorCode("create", ["id": "a", "ifExists": "replace"], from: peer) == -32602)
    }

    @Test("ids that are not printable strings of 1 to 256 bytes get -32602",
          arguments: [JSONValue.string(""), .string("a\nb"), .string("tab\there"), .string("\u{7F}"),
                      .string(String(repeating: "x", count: 257)), .int(7), .bool(true), .array(["a"])])
    func invalidIDs(id: JSONValue) {
        let harness = RPCHarness()
        let peer = harness.connect()
        let message = harness.answer("create", ["id": id], from: peer)
        #expect(message["error"]?["code"] == -32602)
        #expect(message["error"]?["data"]?["param"] == "id")
        #expect(harness.errorCode("get", ["id": id], from: peer) == -32602)
        #expect(harness.registry.count == 0)
    }

    @Test("printable ids up to 256 bytes are accepted, spaces and non-ASCII included",
          arguments: ["a", "build/lib v2", "ünïcødé ✓", String(repeating: "é", count: 128)])
    func validIDs(id: String) {
        let harness = RPCHarness()
        let peer = harness.connect()
        #expect(harness.call("create", ["id": .string(id)], from: peer)["id"] == .string(id))
    }

    struct InvalidParams: Sendable, CustomTestStringConvertible {
        var method: String
        var params: JSONValue
        var param: String
        init(_ method: String, _ params: JSONValue, _ param: String) {
            self.method = method
            self.params = params
            self.param = param
        }
        var testDescription: String { "\(method) \(params)" }
    }

    static let invalidParamsCases: [InvalidParams] = [
        InvalidParams("create", ["name": 3], "name"),
        InvalidParams("create", ["timeoutMs": -1], "timeoutMs"),
        InvalidParams("create", ["timeoutMs": "soon"], "timeoutMs"),
        InvalidParams("create", ["timeoutMs": 1.5], "timeoutMs"),
        InvalidParams("create", ["lease": "yes"], "lease"),
        InvalidParams("resolve", [:], "id"),
        InvalidParams("reject", ["id": "a", "reason": 42], "reason"),
        InvalidParams("reject", ["id": "a", "reason": ["code": 1]], "reason"),
        InvalidParams("reject", ["id": "a", "reason": ["message": "m", "code": "one"]], "reason"),
        InvalidParams("cancel", ["id": .null], "id"),
        InvalidParams("progress", ["id": "a"], "progress"),
        InvalidParams("progress", ["id": "a", "progress": 1.5], "progress"),
        InvalidParams("progress", ["id": "a", "progress": -0.1], "progress"),
        InvalidParams("progress", ["id": "a", "progress": "half"], "progress"),
        InvalidParams("progress", ["id": "a", "progress": 0.5, "message": 1], "message"),
        InvalidParams("list", ["state": "done"], "state"),
        InvalidParams("list", ["limit": 0], "limit"),
        InvalidParams("list", ["cursor": "zzz"], "cursor"),
        InvalidParams("list", ["prefix": 1], "prefix"),
        InvalidParams("forget", ["prefix": "a", "cursor": "zzz"], "cursor"),
        InvalidParams("forget", ["prefix": "a", "cursor": "-1"], "cursor"),
        InvalidParams("forget", ["prefix": ""], "prefix"),
    ]

    @Test("params of the wrong type get -32602 naming the param", arguments: invalidParamsCases)
    func invalidParams(_ invalid: InvalidParams) {
        let (method, params, param) = (invalid.method, invalid.params, invalid.param)
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        let message = harness.answer(method, params, from: peer)
        #expect(message["error"]?["code"] == -32602)
        #expect(message["error"]?["data"]?["param"] == .string(param))
        #expect(harness.state("a", from: peer) == "pending")
    }

    @Test("resolve fulfils with any JSON value; a missing value is null")
    func resolve() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("create", ["id": "b"], from: peer)
        let record = harness.call("resolve", ["id": "a", "value": ["n": 1, "list": [true, "x"]]], from: peer)
        #expect(record["state"] == "fulfilled")
        #expect(record["value"] == ["n": 1, "list": [true, "x"]])
        #expect(record["settled"]?.intValue != nil)
        #expect(record["progress"]?.doubleValue == 1)
        #expect(harness.call("resolve", ["id": "b"], from: peer)["value"] == .null)
    }

    @Test("reject takes a reason object or a string taken as the message")
    func reject() {
        let harness = RPCHarness()
        let peer = harness.connect()
        for id in ["a", "b", "c"] { harness.call("create", ["id": .string(id)], from: peer) }
        let full = harness.call(
            "reject", ["id": "a", "reason": ["code": 2, "message": "make failed", "data": ["target": "lib"]]], from: peer)
        #expect(full["state"] == "rejected")
        #expect(full["reason"] == ["code": 2, "message": "make failed", "data": ["target": "lib"], "origin": "a"])
        #expect(full["value"] == nil)
        let text = harness.call("reject", ["id": "b", "reason": "disk full"], from: peer)
        #expect(text["reason"] == ["message": "disk full", "origin": "b"])
        let bare = harness.call("reject", ["id": "c"], from: peer)
        #expect(bare["reason"]?["message"] == "rejected")
    }

    @Test("cancel makes the promise cancelled, with a reason")
    func cancel() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        let record = harness.call("cancel", ["id": "a"], from: peer)
        #expect(record["state"] == "cancelled")
        #expect(record["reason"] == ["message": "cancelled"])
    }

    @Test("settling a settled promise gets -32002 with its record, and changes nothing",
          arguments: ["resolve", "reject", "cancel", "progress"])
    func alreadySettled(method: String) {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        let message = harness.answer(method, ["id": "a", "value": 2, "reason": "late", "progress": 0.5], from: peer)
        #expect(message["error"]?["code"] == -32002)
        #expect(message["error"]?["data"]?["state"] == "fulfilled")
        #expect(harness.record("a", from: peer)["value"] == 1)
    }

    @Test("methods on an unknown id get -32001 naming it",
          arguments: ["get", "resolve", "reject", "cancel", "progress", "then"])
    func noSuchPromise(method: String) {
        let harness = RPCHarness()
        let peer = harness.connect()
        let message = harness.answer(method, ["id": "ghost", "progress": 0.5], from: peer)
        #expect(message["error"]?["code"] == -32001)
        #expect(message["error"]?["data"]?["id"] == "ghost")
    }

    @Test("progress moves forward only, keeps its message, and 1 once fulfilled")
    func progress() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        let half = harness.call("progress", ["id": "a", "progress": 0.5, "message": "halfway"], from: peer)
        #expect(half["progress"]?.doubleValue == 0.5)
        #expect(half["progressMessage"] == "halfway")
        let back = harness.call("progress", ["id": "a", "progress": 0.25], from: peer)
        #expect(back["progress"]?.doubleValue == 0.5)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(harness.record("a", from: peer)["progress"]?.doubleValue == 1)
    }

    @Test("timeoutMs rejects a promise still pending when it passes, with a clear reason")
    func timeout() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "slow", "timeoutMs": 500], from: peer)
        harness.loop.advance(by: 499)
        #expect(harness.state("slow", from: peer) == "pending")
        harness.loop.advance(by: 1)
        let record = harness.record("slow", from: peer)
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["code"] == -32005)
        #expect(record["reason"]?["message"] == "timed out after 500 ms")
        #expect(record["reason"]?["data"]?["timeoutMs"] == 500)
    }

    @Test("timeoutMs does nothing to a promise settled in time, and its timer is stopped")
    func timeoutAfterSettle() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "quick", "timeoutMs": 500], from: peer)
        #expect(harness.loop.liveTimers == 1)
        harness.call("resolve", ["id": "quick", "value": 1], from: peer)
        #expect(harness.loop.liveTimers == 0)
        harness.loop.advance(by: 1000)
        #expect(harness.state("quick", from: peer) == "fulfilled")
    }

    @Test("a leased promise is rejected when its connection closes while it is pending")
    func lease() {
        let harness = RPCHarness()
        let owner = harness.connect()
        let other = harness.connect()
        harness.call("create", ["id": "held", "lease": true], from: owner)
        harness.call("create", ["id": "done", "lease": true], from: owner)
        harness.call("create", ["id": "free"], from: owner)
        harness.call("resolve", ["id": "done", "value": 1], from: owner)
        harness.call("subscribe", ["ids": ["held"]], from: other)
        harness.close(owner)
        let held = harness.record("held", from: other)
        #expect(held["state"] == "rejected")
        #expect(held["reason"]?["message"]?.stringValue?.contains("lease") == true)
        #expect(harness.state("done", from: other) == "fulfilled")
        #expect(harness.state("free", from: other) == "pending")
        #expect(JSONValue.notifications("settled", in: other.messages).count == 1)
    }

    @Test("maxPromises bounds create with -32004")
    func promiseLimit() {
        var limits = DaemonLimits()
        limits.maxPromises = 2
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", from: peer)
        harness.call("create", ["id": "b"], from: peer)
        let message = harness.answer("create", from: peer)
        #expect(message["error"]?["code"] == -32004)
        #expect(message["error"]?["data"]?["limit"] == "maxPromises")
        #expect(harness.errorCode("then", ["id": "b"], from: peer) == -32004)
        #expect(harness.errorCode("all", ["ids": ["b"]], from: peer) == -32004)
        #expect(harness.call("create", ["id": "b", "ifExists": "get"], from: peer)["id"] == "b")
    }
}
