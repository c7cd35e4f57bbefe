import PromiseJSON
@testable import PromiseRegistry
import PromiseStore
import PromiseTestSupport
import Testing

/// Whether an exec step gets files for its monitor (Registry+Then.swift)
/// is the registry's services' answer (``LoopServices/monitorsSteps``):
/// the registry links no libuv and cannot ask the server itself.
@Suite("Registry: exec steps under a step's monitor")
struct RegistryMonitoredStepsTests {
    /// The spec the durable registry launches "job", an exec child of "src", with.
    private func launchedSpec(monitorsSteps: Bool) throws -> ProcessSpec {
        let harness = RPCHarness(store: MemoryPromiseStore())
        harness.loop.monitorsSteps = monitorsSteps
        harness.registry.stepOutputFolder = "/steps"
        let peer = harness.connect()
        harness.call("create", ["id": "src"], from: peer)
        harness.call("then", ["id": "src", "childId": "job", "exec": ["cc", "-c", "x.c"]], from: peer)
        harness.call("resolve", ["id": "src", "value": 1], from: peer)
        harness.settleStore()
        harness.loop.advance(by: 0)
        return try #require(harness.loop.processes.last).spec
    }

    @Test("services that run steps under a monitor give a durable registry's exec step its files in the step folder")
    func monitoredStepGetsFiles() throws {
        #expect(try launchedSpec(monitorsSteps: true).outputFiles == "/steps/1")
    }

    @Test("services without a monitor give an exec step no files, since nothing would write them")
    func unmonitoredStepGetsNone() throws {
        #expect(try launchedSpec(monitorsSteps: false).outputFiles == nil)
    }
}
