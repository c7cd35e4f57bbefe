import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry
import PromiseStore
import PromiseTestSupport
import Testing

/// Values and reasons the daemon makes by combining others stay within
/// `maxValueBytes`, `maxReasonBytes` and `maxValueDepth` (issue 22, item 1):
/// a value too big is a -32004 rejection of the combinator that would make
/// it, and a reason too big or too deep keeps its innermost causes.
@Suite("Registry: bounded values and reasons")
struct RegistryValueBoundsTests {
    /// The -32004 reason of combinator `origin` whose value would pass `maxValueBytes` (16 MiB by default).
    static func tooBig(_ limit: Int = 16 << 20, origin: String) -> JSONValue {
        ["code": -32004, "message": .string("the combined value would take more than \(limit) bytes"),
         "data": ["limit": "maxValueBytes", "value": .int(limit)], "origin": .string(origin)]
    }

    /// The innermost cause of a reason: down its first `data.errors` entries to one without any.
    static func origin(_ reason: JSONValue?) -> JSONValue {
        var reason = reason
        var id: JSONValue = .null
        while let first = reason?["data"]?["errors"]?.arrayValue?.first {
            id = first["id"] ?? .null
            reason = first["reason"]
        }
        return ["id": id, "message": reason?["message"] ?? .null]
    }

    @Test("a chain of 200 any, each over the one before, keeps every reason within maxValueDepth and 64 KiB, naming the origin")
    func anyChainReasonsStayBounded() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "x0"], from: peer)
        for link in 1..<200 {
            harness.call("any", ["ids": [.string("x\(link - 1)")], "id": .string("x\(link)")], from: peer)
        }
        harness.call("reject", ["id": "x0", "reason": "disk full"], from: peer)
        for link in 1..<200 {
            let reason = harness.record("x\(link)", from: peer)["reason"]
            guard let reason, reason.depth <= 128, reason.serializedByteCount() <= 65_536 else {
                Issue.record("x\(link)'s reason is not bounded: depth \(reason?.depth ?? 0)")
                break
            }
            #expect(reason["message"] == "1 of 1 input promises were rejected")
            #expect(Self.origin(reason) == ["id": "x0", "message": "disk full"], "x\(link)")
        }
        // Each level adds four (reason, data, errors, entry): x32 would be 129 levels deep.
        #expect(harness.record("x31", from: peer)["reason"]?.depth == 125)
        #expect(harness.record("x32", from: peer)["reason"] == [
            "message": "1 of 1 input promises were rejected",
            "data": ["errors": [["id": "x0", "via": "x31", "reason": ["message": "disk full", "origin": "x0"]]],
                     "truncated": true, "omitted": 0],
            "origin": "x32",
        ])
    }

    @Test("all-errors over one input repeated 5,000 times lists the causes that fit in 64 KiB and counts the rest")
    func allErrorsReasonKeepsWhatFits() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let message = String(repeating: "m", count: 1_000)
        harness.call("create", ["id": "a"], from: peer)
        harness.call("reject", ["id": "a", "reason": ["code": 3, "message": .string(message), "data": [1, 2]]],
                     from: peer)
        let reason = harness.call(
            "all", ["ids": .array(Array(repeating: "a", count: 5_000)), "policy": "all-errors"], from: peer)["reason"]
        #expect(reason?["message"] == "5000 of 5000 input promises were rejected")
        #expect(try #require(reason).serializedByteCount() <= 65_536)
        let kept = try #require(reason?["data"]?["errors"]?.arrayValue)
        #expect(kept.count > 50)
        #expect(kept.allSatisfy { $0 == ["id": "a", "reason": ["code": 3, "message": .string(message), "origin": "a"]] })
        #expect(reason?["data"]?["truncated"] == true)
        #expect(reason?["data"]?["omitted"] == .int(5_000 - kept.count))
    }

    @Test("any over one input whose message alone passes 64 KiB keeps the start of the message, marked cut")
    func longMessageIsCut() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("reject", ["id": "a", "reason": .string(String(repeating: "é\n", count: 40_000))], from: peer)
        let reason = try #require(harness.call("any", ["ids": ["a"]], from: peer)["reason"])
        #expect(reason.serializedByteCount() <= 65_536)
        let cause = try #require(reason["data"]?["errors"]?.arrayValue?.first)
        #expect(cause["id"] == "a")
        let kept = try #require(cause["reason"]?["message"]?.stringValue)
        #expect(kept.hasSuffix("…"))
        #expect(kept.utf8.count > 30_000)
        #expect(String(repeating: "é\n", count: 40_000).hasPrefix(kept.dropLast()))
        #expect(reason["data"]?["omitted"] == 0)
    }

    @Test("a reason within the limits is left as it was")
    func smallReasonUnchanged() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("create", ["id": "b"], from: peer)
        harness.call("any", ["ids": ["a", "b"], "id": "first"], from: peer)
        harness.call("reject", ["id": "a", "reason": ["code": 1, "message": "a", "data": ["x": 1]]], from: peer)
        harness.call("reject", ["id": "b", "reason": "b"], from: peer)
        #expect(harness.record("first", from: peer)["reason"] == [
            "message": "2 of 2 input promises were rejected",
            "data": ["errors": [
                ["index": 0, "id": "a", "reason": ["code": 1, "message": "a", "data": ["x": 1], "origin": "a"]],
                ["index": 1, "id": "b", "reason": ["message": "b", "origin": "b"]],
            ]],
            "origin": "first",
        ])
    }

    @Test("all of every policy over a 512 KiB value 40 times (20 MiB) is rejected with -32004 maxValueBytes",
          arguments: ["fail-fast", "all-errors", "ignore-errors", "nulls"])
    func allPastMaxValueBytesIsRejected(policy: String) {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "a", "value": .string(String(repeating: "v", count: 512 << 10))], from: peer)
        let record = harness.call(
            "all", ["ids": .array(Array(repeating: "a", count: 40)), "policy": .string(policy), "id": "big"], from: peer)
        #expect(record["state"] == "rejected")
        #expect(record["reason"] == Self.tooBig(origin: "big"))
        #expect(harness.call("all", ["ids": .array(Array(repeating: "a", count: 30)), "policy": .string(policy)],
                             from: peer)["state"] == "fulfilled")
    }

    @Test("allSettled over a 64 KiB value 300 times and a pending gate is rejected with -32004 when the gate settles")
    func allSettledPastMaxValueBytesIsRejected() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "a", "value": .string(String(repeating: "v", count: 64 << 10))], from: peer)
        harness.call("create", ["id": "gate", "timeoutMs": 3000], from: peer)
        let record = harness.call(
            "allSettled", ["ids": .array(Array(repeating: "a", count: 300) + ["gate"]), "id": "x"], from: peer)
        #expect(record["state"] == "pending")
        harness.loop.advance(by: 3000)
        #expect(harness.record("x", from: peer)["reason"] == Self.tooBig(origin: "x"))
    }

    @Test("all over a 200 KB value 6,000 times is rejected with -32004 and stored as a small rejection")
    func allOfManyCopiesIsStoredRejected() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "a", "value": .string(String(repeating: "v", count: 200_000))], from: peer)
        let record = harness.call("all", ["ids": .array(Array(repeating: "a", count: 6_000)), "id": "x"], from: peer)
        #expect(record["reason"] == Self.tooBig(origin: "x"))
        #expect(store["x"]?.state == .rejected)
        #expect(store["x"]?.value == nil)
        #expect(harness.call("create", ["id": "after"], from: peer)["state"] == "pending")
        #expect(store["after"]?.state == .pending)
    }

    @Test("maxValueBytes counts the value's JSON text: a value of exactly the limit is kept, one byte more is not")
    func maxValueBytesBoundary() {
        var limits = DaemonLimits()
        limits.maxValueBytes = 87  // ["…40 x…","…40 x…"]: 2 × 42 + 3
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "a", "value": .string(String(repeating: "x", count: 40))], from: peer)
        #expect(harness.call("all", ["ids": ["a", "a"]], from: peer)["state"] == "fulfilled")
        harness.call("create", ["id": "b"], from: peer)
        harness.call("resolve", ["id": "b", "value": .string(String(repeating: "x", count: 40) + "\n")], from: peer)
        let tooLong = harness.call("all", ["ids": ["a", "b"]], from: peer)
        #expect(tooLong["reason"] == Self.tooBig(87, origin: tooLong["id"]?.stringValue ?? ""))
    }

    @Test("inputs named more than once count at every position: a combined value of exactly maxValueBytes is kept, one byte less is not",
          arguments: [("all", "fail-fast"), ("all", "nulls"), ("all", "ignore-errors"), ("allSettled", "")])
    func repeatedInputsCountAtEveryPosition(method: String, policy: String) throws {
        func combine(maxValueBytes: Int) -> JSONValue {
            var limits = DaemonLimits()
            limits.maxValueBytes = maxValueBytes
            let harness = RPCHarness(limits: limits)
            let peer = harness.connect()
            harness.call("create", ["id": "a"], from: peer)
            harness.call("resolve", ["id": "a", "value": .string(String(repeating: "x", count: 40) + "\n")], from: peer)
            harness.call("create", ["id": "r"], from: peer)
            harness.call("reject", ["id": "r", "reason": "no"], from: peer)
            let ids: [JSONValue] = policy == "fail-fast" ? ["a", "a", "a"] : ["a", "r", "a", "r", "a"]
            let params: JSONValue = policy.isEmpty
                ? ["ids": .array(ids), "id": "c"] : ["ids": .array(ids), "id": "c", "policy": .string(policy)]
            return harness.call(method, params, from: peer)
        }
        let whole = try #require(combine(maxValueBytes: 16 << 20)["value"])
        let length = whole.serializedByteCount()
        #expect(length == whole.serialized().count)
        let kept = combine(maxValueBytes: length)
        #expect(kept["state"] == "fulfilled")
        #expect(kept["value"] == whole)
        #expect(combine(maxValueBytes: length - 1)["reason"] == Self.tooBig(length - 1, origin: "c"))
    }

    @Test("maxReasonBytes is configurable: a reason past it is summarised within it")
    func maxReasonBytesConfigurable() throws {
        var limits = DaemonLimits()
        limits.maxReasonBytes = 400
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("reject", ["id": "a", "reason": "no"], from: peer)
        let reason = try #require(harness.call(
            "all", ["ids": .array(Array(repeating: "a", count: 100)), "policy": "all-errors"], from: peer)["reason"])
        #expect(reason.serializedByteCount() <= 400)
        let kept = try #require(reason["data"]?["errors"]?.arrayValue)
        #expect(!kept.isEmpty)
        #expect(reason["data"]?["omitted"] == .int(100 - kept.count))
    }

    @Test("info reports maxValueBytes and maxReasonBytes")
    func infoReportsLimits() {
        let harness = RPCHarness()
        let peer = harness.connect()
        let limits = harness.call("info", from: peer)["limits"]
        #expect(limits?["maxValueBytes"] == .int(16 << 20))
        #expect(limits?["maxReasonBytes"] == .int(64 << 10))
    }
}
