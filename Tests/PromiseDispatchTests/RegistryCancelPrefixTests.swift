import Promise
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
import PromiseTestSupport
import Testing

/// `cancelPrefix`: every pending promise whose id starts with a prefix,
/// compared byte for byte, in calls of bounded work.
@Suite("Registry: cancelPrefix")
struct RegistryCancelPrefixTests {
    @Test("cancels the pending promises under the prefix, counts them, and leaves settled and other ones alone")
    func cancelsUnderPrefix() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "build/src"], from: peer)
        harness.call("then", ["id": "build/src", "childId": "build/cc/1", "exec": ["cc"]], from: peer)
        harness.call("then", ["id": "build/src", "childId": "build/cc/2", "exec": ["cc"]], from: peer)
        harness.call("create", ["id": "build/done"], from: peer)
        harness.call("resolve", ["id": "build/done"], from: peer)
        harness.call("create", ["id": "builder"], from: peer)
        harness.call("create", ["id": "other/x"], from: peer)
        harness.call("resolve", ["id": "build/src", "value": 1], from: peer)
        try #require(harness.loop.processes.count == 2)

        #expect(harness.call("cancelPrefix", ["prefix": "build/"], from: peer) == ["cancelled": 2, "cursor": .null])
        for id in ["build/cc/1", "build/cc/2"] { #expect(harness.state(id, from: peer) == "cancelled") }
        #expect(harness.state("build/src", from: peer) == "fulfilled")
        #expect(harness.state("build/done", from: peer) == "fulfilled")
        #expect(harness.state("builder", from: peer) == "pending")
        #expect(harness.state("other/x", from: peer) == "pending")
        #expect(harness.loop.processes.allSatisfy { $0.terminations.count == 1 })
        #expect(harness.call("cancelPrefix", ["prefix": "build/"], from: peer) == ["cancelled": 0, "cursor": .null])
    }

    @Test("counts promises cancelled by a cancel above them in the same call")
    func countsCascade() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "p/root"], from: peer)
        harness.call("then", ["id": "p/root", "childId": "p/a"], from: peer)
        harness.call("then", ["id": "p/a", "childId": "p/b"], from: peer)
        #expect(harness.call("cancelPrefix", ["prefix": "p/"], from: peer)["cancelled"] == 3)
    }

    @Test("compares by UTF-8 bytes: a decomposed accent is not the precomposed one")
    func comparesBytes() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "caf\u{E9}/1"], from: peer)
        harness.call("create", ["id": "cafe\u{301}/1"], from: peer)
        #expect(harness.call("cancelPrefix", ["prefix": "caf\u{E9}"], from: peer)["cancelled"] == 1)
        #expect(harness.state("caf\u{E9}/1", from: peer) == "cancelled")
        #expect(harness.state("cafe\u{301}/1", from: peer) == "pending")
    }

    @Test("one call looks at no more than the scan allowance, and the cursor goes on from there")
    func boundedWithCursor() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let allowance = Registry.cancelPrefixScanAllowance
        for index in 0..<(allowance + 10) {
            harness.registry.register(Promise<JSONValue>(), id: "x\(index)", kind: .created)
        }
        // Made after the others: past the first call's window.
        harness.call("create", ["id": "job/a"], from: peer)
        harness.call("create", ["id": "job/b"], from: peer)
        let first = harness.call("cancelPrefix", ["prefix": "job/"], from: peer)
        #expect(first["cancelled"] == 0)
        let cursor = try #require(first["cursor"]?.stringValue)
        #expect(harness.state("job/a", from: peer) == "pending")
        let second = harness.call("cancelPrefix", ["prefix": "job/", "cursor": .string(cursor)], from: peer)
        #expect(second == ["cancelled": 2, "cursor": .null])
        #expect(harness.state("job/a", from: peer) == "cancelled")
        #expect(harness.state("job/b", from: peer) == "cancelled")
    }

    @Test("an empty or missing prefix and a bad cursor are refused with -32602")
    func badParams() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        #expect(harness.errorCode("cancelPrefix", ["prefix": ""], from: peer) == -32602)
        #expect(harness.errorCode("cancelPrefix", [:], from: peer) == -32602)
        #expect(harness.errorCode("cancelPrefix", ["prefix": 3], from: peer) == -32602)
        #expect(harness.errorCode("cancelPrefix", ["prefix": "a", "cursor": "x"], from: peer) == -32602)
        #expect(harness.state("a", from: peer) == "pending")
    }

    @Test("stops its cancels once its slice of the turn is spent, and goes on from the cursor")
    func stopsAtTheSliceBudget() {
        let harness = RPCHarness()
        // One tick per reading of the clock: 3 cancels a call.
        harness.dispatcher.turnBudget = TurnBudget(nanoseconds: 3, clock: RPCTickClock().read)
        let peer = harness.connect()
        for index in 0..<7 { harness.call("create", ["id": .string("job/\(index)")], from: peer) }
        harness.call("create", ["id": "other"], from: peer)
        let first = harness.call("cancelPrefix", ["prefix": "job/"], from: peer)
        #expect(first["cancelled"] == 3)
        #expect(harness.state("job/2", from: peer) == "cancelled")
        #expect(harness.state("job/3", from: peer) == "pending")
        let second = harness.call("cancelPrefix", ["prefix": "job/", "cursor": first["cursor"] ?? .null], from: peer)
        #expect(second["cancelled"] == 3)
        let third = harness.call("cancelPrefix", ["prefix": "job/", "cursor": second["cursor"] ?? .null], from: peer)
        #expect(third == ["cancelled": 1, "cursor": .null])
        #expect((0..<7).allSatisfy { harness.state("job/\($0)", from: peer) == "cancelled" })
        #expect(harness.state("other", from: peer) == "pending")
    }

    @Test("a call stopped by its slice counts what a cancel above them ended past where it stopped, once")
    func stoppedCallCountsCascadeOnce() {
        let harness = RPCHarness()
        harness.dispatcher.turnBudget = TurnBudget(nanoseconds: 3, clock: RPCTickClock().read)
        let peer = harness.connect()
        for index in 0..<2 { harness.call("create", ["id": .string("job/\(index)")], from: peer) }
        harness.call("create", ["id": "job/parent"], from: peer)
        for index in 0..<3 { harness.call("create", ["id": .string("job/x\(index)")], from: peer) }
        for index in 0..<4 {
            harness.call("then", ["id": "job/parent", "childId": .string("job/kid\(index)")], from: peer)
        }
        // Stops after job/0, job/1 and job/parent, whose cancel ended its 4 children too.
        let first = harness.call("cancelPrefix", ["prefix": "job/"], from: peer)
        #expect(first["cancelled"] == 7)
        #expect(harness.state("job/x0", from: peer) == "pending")
        let second = harness.call("cancelPrefix", ["prefix": "job/", "cursor": first["cursor"] ?? .null], from: peer)
        #expect(second == ["cancelled": 3, "cursor": .null])
    }
}
