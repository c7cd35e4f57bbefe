import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
import Testing

/// All logs together hold at most `maxTotalLogBytes` in memory.
@Suite("Registry log memory budget")
struct RegistryLogBudgetTests {
    private func harness(total: Int) -> RPCHarness {
        var limits = DaemonLimits()
        limits.maxLogBytes = 100
        limits.maxTotalLogBytes = total
        return RPCHarness(limits: limits)
    }

    private func write(_ count: Int, to id: String, _ harness: RPCHarness, _ peer: RPCFakePeer) {
        harness.call("log", ["id": .string(id), "stream": "stdout", "data": .string(String(repeating: "x", count: count))],
                     from: peer)
    }

    @Test("past the budget the log of the step that settled first lets go of its output, and says it was cut")
    func settledLogsGoFirst() {
        let harness = harness(total: 250)
        let peer = harness.connect()
        for id in ["a", "b", "c", "d"] { harness.call("create", ["id": .string(id)], from: peer) }
        write(100, to: "a", harness, peer)
        write(100, to: "b", harness, peer)
        harness.call("resolve", ["id": "b", "value": 1], from: peer)
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        write(100, to: "c", harness, peer)
        // 300 bytes held: b, the first to settle, is cut; a, c and d's are kept.
        let b = harness.call("logs", ["id": "b"], from: peer)
        #expect(b["stdout"] == "")
        #expect(b["stdoutDropped"] == 100)
        #expect(b["truncated"]?["stdout"] == true)
        #expect(harness.call("logs", ["id": "a"], from: peer)["stdout"]?.stringValue?.count == 100)
        #expect(harness.call("logs", ["id": "c"], from: peer)["stdout"]?.stringValue?.count == 100)
        #expect(harness.registry.logBook.heldBytes == 200)
        write(100, to: "d", harness, peer)
        #expect(harness.call("logs", ["id": "a"], from: peer)["stdoutDropped"] == 100)
        #expect(harness.registry.logBook.heldBytes == 200)
    }

    @Test("with only pending logs past the budget, the log being written lets go of its output")
    func pendingLogOverBudgetIsCut() {
        let harness = harness(total: 250)
        let peer = harness.connect()
        for id in ["p1", "p2", "p3"] { harness.call("create", ["id": .string(id)], from: peer) }
        for id in ["p1", "p2", "p3"] { write(100, to: id, harness, peer) }
        #expect(harness.call("logs", ["id": "p1"], from: peer)["stdout"]?.stringValue?.count == 100)
        #expect(harness.call("logs", ["id": "p2"], from: peer)["stdout"]?.stringValue?.count == 100)
        let p3 = harness.call("logs", ["id": "p3"], from: peer)
        #expect(p3["stdout"] == "")
        #expect(p3["stdoutBytes"] == 100)
        #expect(harness.registry.logBook.heldBytes <= 250)
    }

    @Test("a forgotten promise's log gives its bytes back to the budget")
    func forgetFreesTheBudget() {
        let harness = harness(total: 1_000)
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        write(80, to: "a", harness, peer)
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        #expect(harness.registry.logBook.heldBytes == 80)
        harness.call("forget", ["ids": ["a"]], from: peer)
        #expect(harness.registry.logBook.heldBytes == 0)
    }
}
