import Foundation
import Promise
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
@testable import PromiseStore
import Synchronization
import PromiseTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Commands a killed daemon left running: stopped at restart only while
/// their pid still has the start time recorded.
@Suite("Leftover process groups")
struct LeftoverProcessGroupTests {
    /// A process table of one pid, and the signals sent to groups.
    final class FakeSystem: Sendable {
        let startTimes: Mutex<[Int32: UInt64]>
        let signals = Mutex<[(group: Int32, signal: Int32)]>([])

        init(_ startTimes: [Int32: UInt64]) { self.startTimes = Mutex(startTimes) }

        var system: LeftoverProcessGroup.System {
            LeftoverProcessGroup.System(
                startTime: { pid in self.startTimes.withLock { $0[pid] } },
                signalGroup: { group, signal in
                    self.signals.withLock { $0.append((group, signal)) }
                    return true
                })
        }

        var sent: [String] { signals.withLock { $0.map { "\($0.group):\($0.signal)" } } }
    }

    @Test("the start time of this process is read from /proc; a pid that does not exist has none")
    func readsStartTime() {
        let mine = LeftoverProcessGroup.readStartTime(of: getpid())
        #expect(mine != nil && mine! > 0)
        #expect(LeftoverProcessGroup.readStartTime(of: getpid()) == mine)
        #expect(LeftoverProcessGroup.readStartTime(of: Int32.max) == nil)
    }

    @Test("a pid whose start time differs from the recorded one is not signalled; the same one is")
    func onlyTheSameProcessIsSignalled() {
        let fake = FakeSystem([4242: 1_000])
        #expect(LeftoverProcessGroup(pid: 4242, startTime: 999).signalIfSame(SIGTERM, in: fake.system) == false)
        #expect(LeftoverProcessGroup(pid: 4343, startTime: 1_000).signalIfSame(SIGTERM, in: fake.system) == false)
        #expect(fake.sent.isEmpty)
        #expect(LeftoverProcessGroup(pid: 4242, startTime: 1_000).signalIfSame(SIGTERM, in: fake.system))
        #expect(fake.sent == ["4242:\(SIGTERM)"])
    }

    /// A pending exec child whose command was started as pid 4242 at `recorded`.
    private func storedChild(recorded: UInt64) -> StoreContents {
        StoreContents(promises: [
            StoredPromise(id: "src", sequence: 0, kind: .created, created: 1, settled: 2, state: .fulfilled, value: 1),
            StoredPromise(id: "job", sequence: 1, kind: .then, parentID: "src", on: .fulfilled,
                          exec: ["sleep", "60"], created: 1, execStarted: true, execPid: 4242, execStartTime: recorded),
        ])
    }

    @Test("at restart, the group of a command still running is sent TERM, then KILL a second after the grace, and its child rejected")
    func restartStopsTheRecordedGroup() {
        let fake = FakeSystem([4242: 777])
        var limits = DaemonLimits()
        limits.killGraceMilliseconds = 2_000
        let harness = RPCHarness(limits: limits, store: MemoryPromiseStore())
        harness.registry.leftoverProcesses = fake.system
        harness.registry.restore(storedChild(recorded: 777))
        harness.settleStore()
        #expect(fake.sent == ["4242:\(SIGTERM)", "4242:\(SIGCONT)"])
        let record = harness.record("job", from: harness.connect())
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["message"]
            == "stopped at restart: its command was still running when the daemon stopped, and is not run again")
        #expect(record["reason"]?["data"]?["pid"] == 4242)
        // The monitor kills its command's processes at the grace; its own KILL comes a second later.
        harness.loop.advance(by: 2_999)
        #expect(fake.sent == ["4242:\(SIGTERM)", "4242:\(SIGCONT)"])
        harness.loop.advance(by: 1)
        #expect(fake.sent == ["4242:\(SIGTERM)", "4242:\(SIGCONT)", "4242:\(SIGKILL)"])
    }

    @Test("at restart, a recorded pid now used by another process (another start time) is not signalled")
    func restartLeavesAReusedPidAlone() {
        let fake = FakeSystem([4242: 778])
        let harness = RPCHarness(store: MemoryPromiseStore())
        harness.registry.leftoverProcesses = fake.system
        harness.registry.restore(storedChild(recorded: 777))
        harness.settleStore()
        harness.loop.advance(by: 60_000)
        #expect(fake.sent.isEmpty)
        let record = harness.record("job", from: harness.connect())
        #expect(record["reason"]?["message"] == "not run again: its command was running when the daemon stopped")
    }

    @Test("the pid and start time of a started command are stored with its child; old rows without them load")
    func processIsRecordedAndOldRowsLoad() throws {
        let stored = StoredPromise(id: "c", sequence: 3, kind: .then, parentID: "p", exec: ["true"], created: 1,
                                   execStarted: true, execPid: 99, execStartTime: 123_456)
        #expect(stored.json["execPid"] == 99)
        #expect(stored.json["execStartTime"] == 123_456)
        #expect(try StoredPromise(json: stored.json) == stored)
        // Written directly, the document is byte for byte the serialized value (members in sorted order).
        #expect(String(decoding: stored.serializedJSON(), as: UTF8.self)
            == String(decoding: stored.json.serialized(), as: UTF8.self))
        var old = stored.json.objectValue!
        old["execPid"] = nil
        old["execStartTime"] = nil
        let loaded = try StoredPromise(json: .object(old))
        #expect(loaded.execPid == nil && loaded.execStartTime == nil && loaded.execStarted)
        old["execPid"] = "ninety-nine"
        #expect(throws: PromiseStoreError.self) { try StoredPromise(json: .object(old)) }
    }
}
