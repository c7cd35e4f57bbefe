import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
import PromiseTestSupport
import Testing

/// `cancel` of a settled promise (the pinned `cancel` row, RXPromise's rule):
/// it keeps its state and answers -32002, and its pending descendants are
/// cancelled all the same.
@Suite("Registry: cancel through a settled promise")
struct RegistryCancelSettledTests {
    @Test("cancel of a fulfilled root stops the commands running under it, through a settled step, and keeps the root")
    func cancelFulfilledRootStopsPipeline() throws {
        var limits = DaemonLimits()
        limits.killGraceMilliseconds = 1234
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "start"], from: peer)
        harness.call("then", ["id": "start", "childId": "compile", "exec": ["cc", "a.c"]], from: peer)
        harness.call("then", ["id": "start", "childId": "ready"], from: peer)
        harness.call("then", ["id": "ready", "childId": "test", "exec": ["./test"]], from: peer)
        harness.call("then", ["id": "compile", "childId": "link", "exec": ["ld"]], from: peer)
        harness.call("resolve", ["id": "start", "value": 1], from: peer)
        #expect(harness.loop.processes.count == 2)

        #expect(harness.errorCode("cancel", ["id": "start"], from: peer) == -32002)
        #expect(harness.state("start", from: peer) == "fulfilled")
        #expect(harness.state("ready", from: peer) == "fulfilled")
        for id in ["compile", "test", "link"] { #expect(harness.state(id, from: peer) == "cancelled") }
        #expect(harness.loop.processes.map(\.terminations) == [[1234], [1234]])
    }

    @Test("cancel of a settled promise leaves its settled descendants and its siblings' work alone")
    func cancelSettledKeepsSettledDescendants() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "root"], from: peer)
        harness.call("then", ["id": "root", "childId": "done", "exec": ["true"]], from: peer)
        harness.call("create", ["id": "other"], from: peer)
        harness.call("then", ["id": "other", "childId": "elsewhere", "exec": ["sleep", "9"]], from: peer)
        harness.call("resolve", ["id": "root", "value": 1], from: peer)
        harness.call("resolve", ["id": "other", "value": 2], from: peer)
        let done = try #require(harness.loop.processes.first)
        done.exit(0, stdout: "3")
        #expect(harness.errorCode("cancel", ["id": "root"], from: peer) == -32002)
        #expect(harness.record("done", from: peer)["value"] == 3)
        #expect(harness.state("elsewhere", from: peer) == "pending")
        #expect(harness.loop.processes.last?.terminations == [])
    }
}
