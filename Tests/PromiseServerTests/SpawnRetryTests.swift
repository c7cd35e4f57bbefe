import Foundation
import Glibc
import Logging
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseServer
import Testing

/// `then … exec` processes that find no free file descriptor (issue 22,
/// item 7): UVLoopServices tries them again instead of failing them for
/// good. The spawn is made to fail as a full table makes it fail.
@Suite("UVLoopServices: spawns retried when out of file descriptors")
struct SpawnRetryTests {
    /// A loop thread with UVLoopServices whose first `failures` spawns fail with `code`.
    private final class Harness: Sendable {
        let thread: LoopThread
        let services: LoopBound<UVLoopServices>
        let attempts = ServerLocked(0)
        let outcome = ServerLocked<ProcessOutcome?>(nil)
        let exits = ServerLocked(0)
        let process = ServerLocked<LoopBound<any RunningProcess>?>(nil)

        init(failures: Int, code: Int32 = -EMFILE) throws {
            thread = try LoopThread(name: "spawn-retry-test")
            let services = UVLoopServices(loop: thread.loop, logger: serverTestLogger,
                                          environment: ["PATH": "/usr/bin:/bin"])
            services.spawnRetryMilliseconds = [1, 2, 5, 10]
            let attempts = self.attempts
            services.spawnChild = { loop, spec, environment, onExit, onFinished throws(UVError) in
                let attempt = attempts.update { $0 += 1; return $0 }
                if attempt <= failures { throw UVError(code: code, function: "uv_spawn") }
                return try ChildProcess(loop: loop, spec: spec, environment: environment,
                                        onExit: onExit, onFinished: onFinished)
            }
            self.services = LoopBound(services)
            thread.start { _ in }
        }

        func launch(_ spec: ProcessSpec) throws {
            let launched = ServerLocked<Result<Void, UVError>?>(nil)
            let (services, outcome, exits, process) = (self.services, self.outcome, self.exits, self.process)
            thread.onLoop { _ in
                do {
                    let started = try services.value.launch(spec) { result in
                        exits.update { $0 += 1 }
                        outcome.update { $0 = result }
                    }
                    process.update { $0 = LoopBound(started) }
                    launched.update { $0 = .success(()) }
                } catch let error as UVError {
                    launched.update { $0 = .failure(error) }
                } catch {}
            }
            _ = serverWaitUntil { launched.value != nil }
            try launched.value?.get()
        }

        func terminate() {
            let process = self.process
            thread.onLoop { _ in process.value?.value.terminate(graceMilliseconds: 0) }
        }

        func stop() {
            thread.stop()
            thread.waitUntilFinished(timeout: .seconds(5))
        }
    }

    @Test("a spawn that fails with EMFILE is tried again and the process runs")
    func emfileRetriedThenRuns() throws {
        let harness = try Harness(failures: 3)
        defer { harness.stop() }
        try harness.launch(ProcessSpec(argv: ["echo", "ran"]))
        #expect(serverWaitUntil { harness.outcome.value != nil })
        #expect(harness.outcome.value?.exitStatus == 0)
        #expect(harness.outcome.value?.stdout == Array("ran\n".utf8))
        #expect(harness.attempts.value == 4)
        #expect(harness.exits.value == 1)
    }

    @Test("a spawn that still fails with ENFILE after the last try ends with status 127 and the reason")
    func lastTryFailsWith127() throws {
        let harness = try Harness(failures: .max, code: -ENFILE)
        defer { harness.stop() }
        try harness.launch(ProcessSpec(argv: ["echo", "never"]))
        #expect(serverWaitUntil { harness.outcome.value != nil })
        let outcome = try #require(harness.outcome.value)
        #expect(outcome.exitStatus == 127)
        #expect(String(decoding: outcome.stderr, as: UTF8.self)
                    == "cannot run echo: uv_spawn: file table overflow (ENFILE), still after 5 tries")
        #expect(harness.attempts.value == 5)
        #expect(harness.exits.value == 1)
    }

    @Test("a spawn that fails otherwise throws at once, as before")
    func otherFailureThrows() throws {
        let harness = try Harness(failures: 1, code: -ENOENT)
        defer { harness.stop() }
        #expect(throws: UVError.self) { try harness.launch(ProcessSpec(argv: ["echo", "x"])) }
        #expect(harness.attempts.value == 1)
    }

    @Test("terminating a process that waits to start ends it as SIGTERM, without running it")
    func terminatedBeforeStart() throws {
        let harness = try Harness(failures: .max)
        defer { harness.stop() }
        harness.services.value.spawnRetryMilliseconds = [60_000]
        try harness.launch(ProcessSpec(argv: ["echo", "never"]))
        harness.terminate()
        #expect(serverWaitUntil { harness.outcome.value != nil })
        #expect(harness.outcome.value?.signal == SIGTERM)
        #expect(harness.outcome.value?.exitStatus == 128 + SIGTERM)
        #expect(harness.attempts.value == 1)
        #expect(harness.exits.value == 1)
    }
}

@Suite("OpenFileLimit")
struct OpenFileLimitTests {
    @Test("the connection limit is the open-file limit less the daemon's own, the processes' (at most a quarter) and the reserve's descriptors")
    func connectionsFitting() {
        var limits = DaemonLimits()
        limits.maxRunningProcesses = 256
        limits.reservedConnections = 64
        #expect(OpenFileLimit.connections(fitting: 20_000, limits: limits) == 20_000 - 64 - 1_024 - 64)
        #expect(OpenFileLimit.connections(fitting: 1 << 20, limits: limits) == 65_536)
        // Processes take at most a quarter of what is not fixed.
        #expect(OpenFileLimit.connections(fitting: 1_024, limits: limits) == 1_024 - 64 - 240 - 64)
        #expect(OpenFileLimit.connections(fitting: 100, limits: limits) == 16)
    }

    @Test("raising the soft limit never lowers it and reaches the hard limit")
    func raisedToHard() {
        let change = OpenFileLimit.raiseToHardLimit()
        #expect(change.soft >= change.previousSoft)
        #expect(change.soft == change.hard || change.hard == Int.max)
    }
}
