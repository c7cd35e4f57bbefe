import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
import PromiseStore
import Testing

/// The params of `then`, `list`, `cancelPrefix`, `forget`, `log`, `logs`
/// and the pool methods read into the registry's typed commands, and what
/// they refuse, with the param and text docs/PROTOCOL.md gives.
@Suite("Typed commands decoded from params")
struct CommandDecodingTests {
    private static func refusal(_ param: String, _ message: String) -> RPCError {
        RPCError(.invalidParams, message, data: ["param": .string(param)])
    }

    @Test("then reads its exec step: program, cwd, env, pool, retries and delay, and on")
    func thenReadsExecStep() throws {
        let command = try ThenCommand(decoding: RPCParams([
            "id": "a", "childId": "b", "on": "settled", "exec": ["sh", "-c", "true"], "cwd": "/tmp",
            "env": ["K": "v"], "pool": "gpu", "retry": 2, "retryDelayMs": 50, "ifExists": "get",
        ]))
        #expect(command.parentID == "a")
        #expect(command.childID == "b")
        #expect(command.on == .settled)
        #expect(command.ifExists == .get)
        #expect(command.replace == false)
        let step = try #require(command.step)
        #expect(step.argv == ["sh", "-c", "true"])
        #expect(step.cwd == "/tmp")
        #expect(step.env == ["K": "v"])
        #expect(step.pool == "gpu")
        #expect(step.retries == 2)
        #expect(step.retryDelayMilliseconds == 50)
    }

    @Test("then without exec has no step and follows its parent when fulfilled")
    func thenWithoutExec() throws {
        let command = try ThenCommand(decoding: RPCParams(["id": "a"]))
        #expect(command.step == nil)
        #expect(command.on == .fulfilled)
        #expect(command.childID == nil)
    }

    @Test("then refuses the step's params without exec, naming the param", arguments: [
        ("cwd", JSONValue.string("/tmp"), #""cwd" needs "exec""#),
        ("env", JSONValue.object(["K": "v"]), #""env" needs "exec""#),
        ("retry", JSONValue.int(1), #""retry" needs "exec""#),
        ("retryDelayMs", JSONValue.int(10), #""retryDelayMs" needs "exec""#),
        ("pool", JSONValue.string("gpu"), #""pool" needs "exec""#),
    ] as [(String, JSONValue, String)])
    func thenRefusesStepParamsWithoutExec(param: String, value: JSONValue, message: String) {
        #expect(throws: Self.refusal(param, message)) {
            try ThenCommand(decoding: RPCParams(["id": "a", param: value]))
        }
    }

    @Test("then refuses a child that replaces its own parent, and replace beside ifExists get")
    func thenRefusesReplacingItsParent() {
        #expect(throws: Self.refusal("childId", "a child cannot replace its own parent")) {
            try ThenCommand(decoding: RPCParams(["id": "a", "childId": "a", "replace": true]))
        }
        #expect(throws: Self.refusal("replace", #""replace" and "ifExists": "get" exclude each other"#)) {
            try ThenCommand(decoding: RPCParams(["id": "a", "childId": "b", "replace": true, "ifExists": "get"]))
        }
    }

    @Test("then refuses a pool name that is not one, before looking for the pool")
    func thenRefusesBadPoolName() {
        #expect(throws: Self.refusal("pool", #""pool" must be 1 to 64 letters, digits, ".", "_" or "-""#)) {
            try ThenCommand(decoding: RPCParams(["id": "a", "exec": ["true"], "pool": "a b"]))
        }
    }

    @Test("list reads its filters, limit and cursor; the limit is 100 when not given")
    func listReadsQuery() throws {
        let query = try ListQuery(decoding: RPCParams([
            "state": "rejected", "prefix": "build/", "parent": "p", "cursor": "41",
        ]))
        #expect(query.state == .rejected)
        #expect(query.prefix == "build/")
        #expect(query.parentID == "p")
        #expect(query.limit == 100)
        #expect(query.cursor == 41)
    }

    @Test("list refuses a cursor it did not answer and a state it does not know", arguments: [
        (["cursor": "next"], "cursor", #""cursor" must be a cursor returned by an earlier list"#),
        (["cursor": "-1"], "cursor", #""cursor" must be a cursor returned by an earlier list"#),
        (["state": "lost"], "state",
         #""state" must be one of "pending", "fulfilled", "rejected", "cancelled""#),
    ] as [([String: JSONValue], String, String)])
    func listRefusesBadParams(params: [String: JSONValue], param: String, message: String) {
        #expect(throws: Self.refusal(param, message)) { try ListQuery(decoding: RPCParams(params)) }
    }

    @Test("cancelPrefix refuses a missing or empty prefix and a cursor of another kind")
    func cancelPrefixRefusals() throws {
        #expect(throws: Self.refusal("prefix", #"missing "prefix""#)) {
            try CancelPrefixCommand(decoding: RPCParams([:]))
        }
        #expect(throws: Self.refusal(
            "prefix", #""prefix" must not be empty: it would cancel every pending promise"#)) {
            try CancelPrefixCommand(decoding: RPCParams(["prefix": "", "cursor": "x"]))
        }
        #expect(throws: Self.refusal("cursor", #""cursor" must be a cursor returned by an earlier cancelPrefix"#)) {
            try CancelPrefixCommand(decoding: RPCParams(["prefix": "b/", "cursor": "x"]))
        }
        let command = try CancelPrefixCommand(decoding: RPCParams(["prefix": "b/", "cursor": "7"]))
        #expect(command.prefix == "b/")
        #expect(command.cursor == 7)
    }

    @Test("forget takes ids or a prefix with its cursor, never both")
    func forgetIDsOrPrefix() throws {
        guard case .ids(let ids) = try ForgetCommand(decoding: RPCParams(["ids": ["a", "b"]])) else {
            Issue.record("ids were not read as ids")
            return
        }
        #expect(ids == ["a", "b"])
        guard case .prefix(let prefix, let cursor) = try ForgetCommand(
            decoding: RPCParams(["prefix": "b/", "cursor": "3"]))
        else {
            Issue.record("a prefix was not read as a prefix")
            return
        }
        #expect(prefix == "b/")
        #expect(cursor == 3)
        #expect(throws: Self.refusal("prefix", #""ids" and "prefix" exclude each other"#)) {
            try ForgetCommand(decoding: RPCParams(["prefix": "b/", "ids": ["a"]]))
        }
        #expect(throws: Self.refusal(
            "prefix", #""prefix" must not be empty: it would forget every settled promise"#)) {
            try ForgetCommand(decoding: RPCParams(["prefix": ""]))
        }
    }

    @Test("log needs its stream and data; logs follows only when asked")
    func logParams() throws {
        #expect(throws: Self.refusal("stream", #""stream" is required: "stdout" or "stderr""#)) {
            try LogCommand(decoding: RPCParams(["id": "a", "data": "x"]))
        }
        #expect(throws: Self.refusal("data", #""data" is required: the output, as a string"#)) {
            try LogCommand(decoding: RPCParams(["id": "a", "stream": "stderr"]))
        }
        let log = try LogCommand(decoding: RPCParams(["id": "a", "stream": "stderr", "data": "x", "skipped": 4]))
        #expect(log.stream == .stderr)
        #expect(log.data == "x")
        #expect(log.skipped == 4)
        #expect(try LogsQuery(decoding: RPCParams(["id": "a"])).follow == false)
    }

    @Test("pool.set needs a limit; pool.acquire and pool.release need a pool")
    func poolParams() throws {
        #expect(throws: Self.refusal("limit", "missing \"limit\" (slots, 0 to \(ExecPools.maxLimit))")) {
            try PoolSetCommand(decoding: RPCParams(["pool": "gpu"]))
        }
        #expect(throws: Self.refusal("pool", #"missing "pool""#)) {
            try PoolReleaseCommand(decoding: RPCParams([:]))
        }
        let acquire = try PoolAcquireCommand(decoding: RPCParams(["pool": "gpu", "id": "a"]))
        #expect(acquire.pool == "gpu")
        #expect(acquire.promiseID == "a")
    }
}
