import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseDispatch
import PromiseRegistry
import PromiseTestSupport
import Testing

/// Values travel back nested inside records, envelopes and combinator
/// results; the daemon caps how deeply they may nest so that every answer
/// stays readable by a strict parser.
@Suite("Dispatcher: value depth")
struct DispatcherDepthTests {
    static func nested(_ levels: Int) -> JSONValue {
        var value: JSONValue = 1
        for _ in 0..<levels { value = [value] }
        return value
    }

    @Test("params nested deeper than maxValueDepth are refused with -32004, and nothing is stored")
    func deepParamsRefused() {
        var limits = DaemonLimits()
        limits.maxValueDepth = 10
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        _ = harness.call("create", ["id": "a"], from: peer)
        // params → value adds one level: a value of depth 9 is at the limit, 10 is over it.
        #expect(harness.errorCode("resolve", ["id": "a", "value": Self.nested(10)], from: peer) == -32004)
        #expect(harness.state("a", from: peer) == "pending")
        #expect(harness.call("resolve", ["id": "a", "value": Self.nested(9)], from: peer)["state"] == "fulfilled")
    }

    @Test("the default limit keeps a 512-level value out, so answers never exceed the parser's depth")
    func defaultLimitBelowParserDepth() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        _ = harness.call("create", ["id": "deep"], from: peer)
        #expect(harness.errorCode("resolve", ["id": "deep", "value": Self.nested(500)], from: peer) == -32004)
        #expect(DaemonLimits().maxValueDepth < 512 / 2)
        #expect(harness.call("info", from: peer)["limits"]?["maxValueDepth"] == .int(DaemonLimits().maxValueDepth))
    }

    @Test("an exec command's JSON output nested deeper than the limit is kept as text")
    func deepExecOutputKeptAsText() {
        var limits = DaemonLimits()
        limits.maxValueDepth = 3
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        _ = harness.call("create", ["id": "p"], from: peer)
        _ = harness.call("then", ["id": "p", "childId": "c", "exec": ["sh", "-c", "true"]], from: peer)
        _ = harness.call("resolve", ["id": "p", "value": 1], from: peer)
        harness.loop.processes.last?.exit(0, stdout: "[[[[1]]]]\n")
        #expect(harness.record("c", from: peer)["value"] == .string("[[[[1]]]]"))
    }

    @Test("depth counts nesting: 0 for scalars, 1 per array or object level")
    func depthCounts() {
        #expect(JSONValue.int(1).depth == 0)
        #expect(JSONValue.array([]).depth == 1)
        #expect(JSONValue.object(["a": [1, [2]]]).depth == 3)
        #expect(Self.nested(7).depth == 7)
        #expect(JSONValue.array([1, [[[]]], [], ["k": [2]]]).depth == 4)
    }
}
