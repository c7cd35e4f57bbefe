import Foundation
import Promise
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

@Suite("Registry: step logs")
struct RegistryLogsTests {
    /// A pending parent "a" with an exec child "job".
    private func withExecChild(limits: DaemonLimits = DaemonLimits(), store: MemoryPromiseStore? = nil)
        -> (RPCHarness, RPCFakePeer)
    {
        let harness = RPCHarness(limits: limits, store: store)
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("then", ["id": "a", "childId": "job", "exec": ["make"]], from: peer)
        return (harness, peer)
    }

    @Test("an exec step's stdout and stderr are kept after it succeeds and after it fails",
          arguments: [0, 2] as [Int32])
    func execStepKeepsOutput(status: Int32) throws {
        let (harness, peer) = withExecChild()
        harness.call("resolve", ["id": "a"], from: peer)
        try #require(harness.loop.processes.first).exit(status, stdout: "out 1\nout 2\n", stderr: "warning\n")
        let logs = harness.call("logs", ["id": "job"], from: peer)
        #expect(logs["stdout"] == "out 1\nout 2\n")
        #expect(logs["stderr"] == "warning\n")
        #expect(logs["state"] == (status == 0 ? "fulfilled" : "rejected"))
        #expect(logs["truncated"] == ["stdout": false, "stderr": false])
        #expect(logs["stdoutDropped"] == 0)
        #expect(logs["stdoutBytes"] == 12)
    }

    @Test("output past maxLogBytes is cut from the front, and the answer says how much")
    func cutFromFront() throws {
        var limits = DaemonLimits()
        limits.maxLogBytes = 5
        let (harness, peer) = withExecChild(limits: limits)
        harness.call("resolve", ["id": "a"], from: peer)
        try #require(harness.loop.processes.first).exit(1, stdout: "0123456789", stderr: "abc")
        let logs = harness.call("logs", ["id": "job"], from: peer)
        #expect(logs["stdout"] == "56789")
        #expect(logs["stdoutDropped"] == 5)
        #expect(logs["stdoutBytes"] == 10)
        #expect(logs["stderr"] == "abc")
        #expect(logs["truncated"] == ["stdout": true, "stderr": false])
        #expect(logs["limit"] == 5)
    }

    @Test("a promise without output has empty logs; an unknown id is -32001")
    func emptyAndUnknown() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "quiet"], from: peer)
        let logs = harness.call("logs", ["id": "quiet"], from: peer)
        #expect(logs["stdout"] == "")
        #expect(logs["stderr"] == "")
        #expect(logs["stdoutBytes"] == 0)
        #expect(harness.errorCode("logs", ["id": "nope"], from: peer) == -32001)
    }

    @Test("log appends to a pending promise's log; bad params are -32602; a settled promise is -32002")
    func logMethod() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "run"], from: peer)
        harness.call("log", ["id": "run", "stream": "stdout", "data": "one\n"], from: peer)
        harness.call("log", ["id": "run", "stream": "stderr", "data": "e\n"], from: peer)
        let answer = harness.call("log", ["id": "run", "stream": "stdout", "data": "two\n"], from: peer)
        #expect(answer == ["stdoutBytes": 8, "stderrBytes": 2])
        #expect(harness.errorCode("log", ["id": "run", "stream": "stdin", "data": "x"], from: peer) == -32602)
        #expect(harness.errorCode("log", ["id": "run", "stream": "stdout"], from: peer) == -32602)
        #expect(harness.errorCode("log", ["id": "run", "stream": "stdout", "data": "x", "skipped": -1], from: peer)
                == -32602)
        #expect(harness.errorCode("log", ["id": "none", "stream": "stdout", "data": "x"], from: peer) == -32001)
        harness.call("resolve", ["id": "run"], from: peer)
        #expect(harness.errorCode("log", ["id": "run", "stream": "stdout", "data": "late"], from: peer) == -32002)
        let logs = harness.call("logs", ["id": "run"], from: peer)
        #expect(logs["stdout"] == "one\ntwo\n")
        #expect(logs["stderr"] == "e\n")
    }

    @Test("skipped bytes count as dropped, with everything kept before them")
    func skippedCounts() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "run"], from: peer)
        harness.call("log", ["id": "run", "stream": "stdout", "data": "old"], from: peer)
        harness.call("log", ["id": "run", "stream": "stdout", "data": "tail", "skipped": 10], from: peer)
        let logs = harness.call("logs", ["id": "run"], from: peer)
        #expect(logs["stdout"] == "tail")
        #expect(logs["stdoutDropped"] == 13)
        #expect(logs["truncated"]?["stdout"] == true)
    }

    @Test("huge skipped counts saturate instead of overflowing; past 2^53 they are -32602")
    func skippedSaturates() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "run"], from: peer)
        for _ in 0..<1100 {
            harness.notify("log", ["id": "run", "stream": "stdout", "data": "x", "skipped": .int(1 << 53)], from: peer)
        }
        let logs = harness.call("logs", ["id": "run"], from: peer)
        #expect(logs["stdoutBytes"] == .int(Int.max))
        #expect(logs["stdout"] == "x")
        #expect(harness.errorCode("log", ["id": "run", "stream": "stdout", "data": "x", "skipped": .int((1 << 53) + 1)],
                                  from: peer) == -32602)
    }

    @Test("follow sends each new chunk as a log notification until the promise settles, then stops following")
    func followUntilSettled() {
        let harness = RPCHarness()
        let follower = harness.connect()
        let writer = harness.connect()
        harness.call("create", ["id": "run"], from: writer)
        harness.call("log", ["id": "run", "stream": "stdout", "data": "before\n"], from: writer)
        let answer = harness.call("logs", ["id": "run", "follow": true], from: follower)
        #expect(answer["stdout"] == "before\n")
        harness.call("log", ["id": "run", "stream": "stderr", "data": "after\n"], from: writer)
        let pushed = follower.takeMessages().filter { $0["method"] == "log" }
        #expect(pushed == [[
            "jsonrpc": "2.0", "method": "log",
            "params": ["id": "run", "stream": "stderr", "data": "after\n", "offset": 0],
        ]])
        #expect(harness.registry.logBook.follows.count == 1)
        harness.call("resolve", ["id": "run"], from: writer)
        #expect(harness.registry.logBook.follows.isEmpty)
        #expect(harness.registry.logBook.logs["run"]?.followers.isEmpty == true)
    }

    @Test("a follower's connection closing stops its follow")
    func followEndsOnDisconnect() {
        let harness = RPCHarness()
        let follower = harness.connect()
        let writer = harness.connect()
        harness.call("create", ["id": "run"], from: writer)
        harness.call("logs", ["id": "run", "follow": true], from: follower)
        harness.close(follower)
        #expect(harness.registry.logBook.follows.isEmpty)
        #expect(harness.registry.logBook.logs["run"]?.followers.isEmpty == true)
    }

    @Test("a character split between two chunks reaches followers whole")
    func followKeepsCharactersWhole() throws {
        let (harness, peer) = withExecChild()
        let follower = harness.connect()
        harness.call("logs", ["id": "job", "follow": true], from: follower)
        [UInt8]([0x61, 0xE2, 0x82]).withUnsafeBytes { harness.registry.appendLog("job", sequence: 1, .stdout, $0) }
        [UInt8]([0xAC, 0x0A]).withUnsafeBytes { harness.registry.appendLog("job", sequence: 1, .stdout, $0) }
        let data = follower.takeMessages().filter { $0["method"] == "log" }.map { $0["params"]?["data"] }
        #expect(data == ["a", "€\n"])
        _ = peer
    }

    @Test("a non-UTF-8 byte is shown as U+FFFD")
    func invalidUTF8Replaced() throws {
        let (harness, peer) = withExecChild()
        harness.call("resolve", ["id": "a"], from: peer)
        [UInt8]([0x6F, 0xFF, 0x6B]).withUnsafeBytes { harness.registry.appendLog("job", sequence: 1, .stdout, $0) }
        #expect(harness.call("logs", ["id": "job"], from: peer)["stdout"] == "o\u{FFFD}k")
    }

    // MARK: Durability

    @Test("a step's log is written with the commit that settles it, and comes back after a restart")
    func survivesRestart() throws {
        let store = MemoryPromiseStore()
        let (harness, peer) = withExecChild(store: store)
        harness.call("resolve", ["id": "a"], from: peer)
        let commits = store.commitCount
        try #require(harness.loop.processes.first).exit(3, stdout: "partial\n", stderr: "broke\n")
        harness.settleStore()
        #expect(store.commitCount == commits + 1)
        let sequence = try #require(store["job"]?.sequence)
        #expect(store["job"]?.state == .rejected)
        #expect(store.log(sequence: sequence)?.stderr == Array("broke\n".utf8))

        let restarted = RPCHarness(store: store)
        restarted.registry.restore(try store.load())
        let logs = restarted.call("logs", ["id": "job"], from: restarted.connect())
        #expect(logs["stdout"] == "partial\n")
        #expect(logs["stderr"] == "broke\n")
    }

    @Test("a running step's output is not committed per chunk, but once per save period")
    func savedOncePerPeriod() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        let peer = harness.connect()
        harness.call("create", ["id": "run"], from: peer)
        let sequence = try #require(store["run"]?.sequence)
        let commits = store.commitCount
        for index in 0..<20 {
            harness.notify("log", ["id": "run", "stream": "stdout", "data": .string("line \(index)\n")], from: peer)
        }
        #expect(store.commitCount == commits)
        #expect(store.log(sequence: sequence) == nil)
        harness.loop.advance(by: Registry.logSaveMilliseconds)
        harness.settleStore()
        #expect(store.commitCount == commits + 1)
        #expect(store.log(sequence: sequence)?.stdout.count == (0..<20).map { "line \($0)\n".utf8.count }.reduce(0, +))
    }

    @Test("a clean stop saves the output a running step wrote since the last save, for the restart")
    func stopSavesUnsavedOutput() throws {
        let store = MemoryPromiseStore()
        let harness = RPCHarness(store: store)
        let peer = harness.connect()
        harness.call("create", ["id": "run"], from: peer)
        harness.notify("log", ["id": "run", "stream": "stdout", "data": "before the stop\n"], from: peer)
        var stopped = false
        harness.dispatcher.stop { stopped = true }
        harness.settleStore()
        #expect(stopped)
        let restarted = RPCHarness(store: store)
        restarted.registry.restore(try store.load())
        let logs = restarted.call("logs", ["id": "run"], from: restarted.connect())
        #expect(logs["state"] == "pending")
        #expect(logs["stdout"] == "before the stop\n")
    }

    @Test("forget drops the log, in memory and in the store")
    func forgetDrops() throws {
        let store = MemoryPromiseStore()
        let (harness, peer) = withExecChild(store: store)
        harness.call("resolve", ["id": "a"], from: peer)
        try #require(harness.loop.processes.first).exit(0, stdout: "1", stderr: "note")
        harness.settleStore()
        let sequence = try #require(store["job"]?.sequence)
        #expect(store.log(sequence: sequence) != nil)
        #expect(harness.registry.logBook.logs["job"] != nil)
        harness.call("forget", ["ids": ["job"]], from: peer)
        #expect(store.log(sequence: sequence) == nil)
        #expect(harness.registry.logBook.logs["job"] == nil)
        // The id made again starts with an empty log.
        harness.call("create", ["id": "job"], from: peer)
        #expect(harness.call("logs", ["id": "job"], from: peer)["stderr"] == "")
    }

    @Test("retention drops the log with its promise")
    func retentionDrops() throws {
        let store = MemoryPromiseStore()
        let (harness, peer) = withExecChild(store: store)
        harness.registry.retain(forMilliseconds: 1_000)
        harness.call("resolve", ["id": "a"], from: peer)
        try #require(harness.loop.processes.first).exit(0, stdout: "1", stderr: "note")
        harness.settleStore()
        let sequence = try #require(store["job"]?.sequence)
        #expect(store.log(sequence: sequence)?.stderr == Array("note".utf8))
        #expect(harness.registry.logBook.logs["job"] != nil)
        harness.registry.now = { Int64(Date().timeIntervalSince1970 * 1000) + 10_000 }
        harness.loop.advance(by: 60_000)
        harness.settleStore()
        #expect(store["job"] == nil)
        #expect(store.log(sequence: sequence) == nil)
        #expect(harness.registry.logBook.logs["job"] == nil)
    }
}
