import Foundation
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// A restart that finds what a step's monitor wrote while no daemon ran
/// (Registry+RunningSteps.swift): the step settles from it, as the daemon
/// that started it would have settled it.
@Suite("Registry: steps whose monitor outlived the daemon")
struct RegistryRunningStepsTests {
    /// A pending exec child "job" (sequence 1) whose command was started by
    /// monitor 4242 at start time 777, with a log saved before the daemon died.
    private func storedChild(stderrSaved: String) -> StoreContents {
        StoreContents(
            promises: [
                StoredPromise(id: "src", sequence: 0, kind: .created, created: 1, settled: 2, state: .fulfilled, value: 1),
                StoredPromise(id: "job", sequence: 1, kind: .then, parentID: "src", on: .fulfilled,
                              exec: ["cc", "-c", "x.c"], created: 1, execStarted: true, execPid: 4242, execStartTime: 777,
                              started: 5),
            ],
            logs: [StoredStepLog(id: "job", sequence: 1, stdout: [], stderr: Array(stderrSaved.utf8))])
    }

    /// A folder holding the files monitor 4242 wrote for "job" once its command ended.
    private func stepFolder(stdout: String, stderr: String, status: Int, signal: Int = 0) throws -> String {
        let folder = NSTemporaryDirectory() + "steps-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: folder + "/1.out", contents: Data(stdout.utf8)))
        #expect(FileManager.default.createFile(atPath: folder + "/1.err", contents: Data(stderr.utf8)))
        #expect(FileManager.default.createFile(atPath: folder + "/1.result", contents: Data(
            "promised-step-result 1 status=\(status) signal=\(signal) stdout=\(stdout.utf8.count) truncated=0 stderr=\(stderr.utf8.count)\n".utf8)))
        // A file a step settled before the restart left behind, and one that is no step's.
        #expect(FileManager.default.createFile(atPath: folder + "/0.result", contents: Data()))
        #expect(FileManager.default.createFile(atPath: folder + "/notes.txt", contents: Data()))
        return folder
    }

    private func restarted(_ contents: StoreContents, folder: String) -> RPCHarness {
        let harness = RPCHarness(store: MemoryPromiseStore())
        // No process 4242 runs any more.
        harness.registry.leftoverProcesses = LeftoverProcessGroup.System(startTime: { _ in nil }, signalGroup: { _, _ in false })
        harness.registry.stepOutputFolder = folder
        let summary = harness.registry.restore(contents)
        #expect(summary.settledFromWrittenOutcome == 1)
        #expect(summary.rejected == 0)
        harness.settleStore()
        return harness
    }

    @Test("a step whose command ended while no daemon ran is fulfilled at restart from its written stdout, its log completed")
    func endedWhileDownIsFulfilled() throws {
        let folder = try stepFolder(stdout: "{\"objects\":1}\n", stderr: "warning: unused\n", status: 0)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let harness = restarted(storedChild(stderrSaved: "warn"), folder: folder)
        let peer = harness.connect()
        let record = harness.record("job", from: peer)
        #expect(record["state"] == "fulfilled")
        #expect(record["value"] == ["objects": 1])
        #expect(record["exitStatus"] == 0)
        let logs = harness.call("logs", ["id": "job"], from: peer)
        #expect(logs["stderr"] == "warning: unused\n")
        #expect(logs["stdout"] == "{\"objects\":1}\n")
        #expect(logs["stderrBytes"] == 16)
        // Once the settlement is stored, the step's files go, and so does what no step needs.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["notes.txt"])
    }

    @Test("a step whose command failed while no daemon ran is rejected at restart with its exit status and the end of its stderr")
    func failedWhileDownIsRejected() throws {
        let folder = try stepFolder(stdout: "", stderr: "x.c:1: error: expected ';'\n", status: 1)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let harness = restarted(storedChild(stderrSaved: ""), folder: folder)
        let record = harness.record("job", from: harness.connect())
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["code"] == 1)
        #expect(record["reason"]?["message"] == "x.c:1: error: expected ';'")
        #expect(record["exitStatus"] == 1)
    }

    @Test("a step whose monitor is gone without writing an outcome (a reboot) is rejected at restart, not run again")
    func goneWithoutOutcomeIsRejected() throws {
        let folder = NSTemporaryDirectory() + "steps-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(FileManager.default.createFile(atPath: folder + "/1.out", contents: Data("half".utf8)))
        let harness = RPCHarness(store: MemoryPromiseStore())
        harness.registry.leftoverProcesses = LeftoverProcessGroup.System(startTime: { _ in nil }, signalGroup: { _, _ in false })
        harness.registry.stepOutputFolder = folder
        harness.registry.restore(storedChild(stderrSaved: ""))
        harness.settleStore()
        harness.loop.advance(by: 0)
        #expect(harness.loop.processes.isEmpty)
        let record = harness.record("job", from: harness.connect())
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["message"] == "not run again: its command was running when the daemon stopped")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }
}
