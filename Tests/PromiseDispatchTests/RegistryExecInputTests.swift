@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// What a `then … exec` command is given (issue 22, item 8): what runs is
/// what the record shows, or nothing. A C string ends at its first NUL, and
/// `name=value` is how a variable is written, so a NUL anywhere or a name with
/// `=` would run something else; and its stdin stays within `maxValueBytes`.
@Suite("Registry: exec input")
struct RegistryExecInputTests {
    private func setUp(limits: DaemonLimits = DaemonLimits()) -> (RPCHarness, RPCFakePeer) {
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        return (harness, peer)
    }

    @Test("then refuses a NUL in exec, cwd or env, and an env name empty or with =, naming the param",
          arguments: [
            (["exec": ["sh", "-c", "echo A\u{0}; echo B"]], "exec"),
            (["exec": ["echo\u{0}", "A"]], "exec"),
            (["exec": ["echo"], "cwd": "/tmp\u{0}/elsewhere"], "cwd"),
            (["exec": ["env"], "env": ["PATH=/evil:": "x"]], "env"),
            (["exec": ["env"], "env": ["": "x"]], "env"),
            (["exec": ["env"], "env": ["A\u{0}B": "x"]], "env"),
            (["exec": ["env"], "env": ["A": "x\u{0}y"]], "env"),
          ] as [(JSONValue, String)])
    func invalidExecInput(params: JSONValue, param: String) throws {
        let (harness, peer) = setUp()
        var members = try #require(params.objectValue)
        members["id"] = "a"
        members["childId"] = "job"
        let answer = harness.answer("then", .object(members), from: peer)
        #expect(answer["error"]?["code"] == -32602)
        #expect(answer["error"]?["data"]?["param"] == .string(param))
        #expect(harness.answer("get", ["id": "job"], from: peer)["error"]?["code"] == -32001)
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(harness.loop.processes.isEmpty)
    }

    @Test("of several faulty env variables, the error names the first by name, whatever the request's order")
    func firstFaultyVariableByName() throws {
        let (harness, peer) = setUp()
        let env: JSONValue = ["Z=": "x", "M": "x\u{0}", "B": "ok", "C\u{0}": "x", "A": "fine"]
        let answer = harness.answer("then", ["id": "a", "childId": "job", "exec": ["env"], "env": env], from: peer)
        #expect(answer["error"]?["message"] == #""env" names must be non-empty, without "=" or NUL (not "C\u0000")"#)
        let valueAnswer = harness.answer(
            "then", ["id": "a", "childId": "job", "exec": ["env"], "env": ["Z=": "x", "M": "x\u{0}"]], from: peer)
        #expect(valueAnswer["error"]?["message"] == #""env" values must not hold a NUL character (in "M")"#)
    }

    @Test("then accepts env values holding =, and names and values of any other text")
    func validEnv() throws {
        let (harness, peer) = setUp()
        harness.call("then", ["id": "a", "childId": "job", "exec": ["env"],
                              "env": ["OPTS": "a=b", "ÜBER": "ünï ✓", "EMPTY": ""]], from: peer)
        harness.call("resolve", ["id": "a"], from: peer)
        let process = try #require(harness.loop.processes.first)
        #expect(process.spec.env["OPTS"] == "a=b")
        #expect(process.spec.env["EMPTY"] == "")
    }

    @Test("a stored exec child with a NUL in its command is rejected when its parent settles, and never runs")
    func restoredInvalidCommandNeverRuns() throws {
        let store = MemoryPromiseStore([
            StoredPromise(id: "a", sequence: 0, kind: .created, created: 1),
            StoredPromise(id: "job", sequence: 1, kind: .then, parentID: "a", on: .fulfilled,
                          exec: ["sh", "-c", "echo A\u{0}; rm -rf B"], created: 1),
            StoredPromise(id: "env", sequence: 2, kind: .then, parentID: "a", on: .fulfilled,
                          exec: ["env"], env: ["PATH=/evil:": "x"], created: 1),
        ])
        let harness = RPCHarness(store: store)
        harness.registry.restore(try store.load())
        harness.settleStore()
        let peer = harness.connect()
        harness.call("resolve", ["id": "a"], from: peer)
        #expect(harness.loop.processes.isEmpty)
        let job = harness.record("job", from: peer)
        #expect(job["state"] == "rejected")
        #expect(job["reason"]?["code"] == -32602)
        #expect(job["reason"]?["data"]?["param"] == "exec")
        #expect(job["reason"]?["message"]?.stringValue?.hasPrefix("not run: ") == true)
        #expect(harness.record("env", from: peer)["reason"]?["data"]?["param"] == "env")
        #expect(store["job"]?.state == .rejected)
    }

    @Test("the commands of one parent share one copy of a large input, kept only while one of them runs")
    func largeInputIsShared() throws {
        let (harness, peer) = setUp()
        for child in ["one", "two", "three"] {
            harness.call("then", ["id": "a", "childId": .string(child), "exec": ["cat"]], from: peer)
        }
        harness.call("then", ["id": "a", "childId": "other", "on": "settled", "exec": ["cat"]], from: peer)
        let value = JSONValue.string(String(repeating: "v", count: 100_000))
        harness.call("resolve", ["id": "a", "value": value], from: peer)
        let processes = harness.loop.processes
        #expect(processes.count == 4)
        let buffers = processes.map { $0.spec.stdin.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        #expect(Set(buffers).count == 1)
        #expect(processes.first?.spec.stdin == value.serialized() + [UInt8(ascii: "\n")])
        #expect(harness.registry.entries["a"]?.execInput != nil)
        for process in processes { process.exit(0) }
        #expect(harness.registry.entries["a"]?.execInput == nil)
        // A command started once none runs writes its input again.
        harness.call("then", ["id": "a", "childId": "late", "exec": ["cat"]], from: peer)
        #expect(harness.loop.processes.last?.spec.stdin == value.serialized() + [UInt8(ascii: "\n")])
    }

    @Test("an exec child whose input would pass maxValueBytes is rejected with -32004 and its command not started")
    func inputPastMaxValueBytes() {
        var limits = DaemonLimits()
        limits.maxValueBytes = 100
        let (harness, peer) = setUp(limits: limits)
        harness.call("then", ["id": "a", "childId": "job", "exec": ["cat"]], from: peer)
        harness.call("create", ["id": "b"], from: peer)
        harness.call("then", ["id": "b", "childId": "fits", "exec": ["cat"]], from: peer)
        harness.call("resolve", ["id": "a", "value": .string(String(repeating: "x", count: 99))], from: peer)
        harness.call("resolve", ["id": "b", "value": .string(String(repeating: "x", count: 98))], from: peer)
        #expect(harness.record("job", from: peer)["reason"] == [
            "code": -32004, "message": "the command's input would take more than 100 bytes",
            "data": ["limit": "maxValueBytes", "value": 100], "origin": "job",
        ])
        #expect(harness.loop.processes.map(\.spec.stdin.count) == [101])  // "fits": 100 bytes and a newline
        #expect(harness.call("info", from: peer)["runningProcesses"] == 1)
    }
}
