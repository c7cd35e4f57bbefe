import Foundation
import Glibc
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseServer
import Testing

/// A loop thread with the daemon's LoopServices on it.
private struct UVServicesHarness {
    let thread: LoopThread
    let services: LoopBound<UVLoopServices>

    init(starter: ProcessStarter = .preferred) throws {
        thread = try LoopThread(name: "test-loop")
        // Built before the loop thread starts, then used on it only.
        services = LoopBound(UVLoopServices(loop: thread.loop, logger: serverTestLogger,
                                            environment: ["PATH": "/usr/bin:/bin", "KEPT": "daemon"]))
        services.value.spawnChild = { loop, spec, environment, onExit, onFinished throws(UVError) in
            try ChildProcess(loop: loop, spec: spec, environment: environment, starter: starter,
                             onExit: onExit, onFinished: onFinished)
        }
        thread.start { _ in }
    }

    func stop() {
        thread.stop()
        thread.waitUntilFinished(timeout: .seconds(5))
    }

    /// A process started by ``launch(_:)``: its outcome, once it has one.
    final class Started: Sendable {
        let result = ServerLocked<Result<ProcessOutcome, any Error>?>(nil)
        let exitCount = ServerLocked(0)
        let process = ServerLocked<LoopBound<any RunningProcess>?>(nil)

        /// Waits (bounded) for the outcome.
        func outcome(timeout: Duration = .seconds(10)) throws -> ProcessOutcome {
            guard serverWaitUntil(timeout: timeout, { result.value != nil }) else {
                throw ServerTestClient.Failure(description: "process did not finish in time")
            }
            return try result.value!.get()
        }
    }

    /// Launches `spec` on the loop without waiting for it.
    func launch(_ spec: ProcessSpec) -> Started {
        let started = Started()
        let services = self.services
        thread.onLoop { _ in
            do {
                let process = try services.value.launch(spec) { outcome in
                    started.exitCount.update { $0 += 1 }
                    started.result.update { $0 = .success(outcome) }
                }
                started.process.update { $0 = LoopBound(process) }
            } catch {
                started.result.update { $0 = .failure(error) }
            }
        }
        return started
    }

    /// Calls `terminate` on the loop.
    func terminate(_ started: Started, graceMilliseconds: UInt64) {
        thread.onLoop { _ in
            started.process.value?.value.terminate(graceMilliseconds: graceMilliseconds)
        }
    }

    /// Processes still tracked, read on the loop.
    func runningCount() -> Int {
        let count = ServerLocked<Int?>(nil)
        let services = self.services
        thread.onLoop { _ in
            let value = services.value.runningCount
            count.update { $0 = value }
        }
        _ = serverWaitUntil { count.value != nil }
        return count.value ?? -1
    }

    /// Launches `spec` on the loop; `started` runs on the loop with the process.
    /// Returns the launch error or the outcome, and how many times onExit ran.
    func run(
        _ spec: ProcessSpec,
        timeout: Duration = .seconds(10),
        started: (@Sendable (any RunningProcess) -> Void)? = nil
    ) throws -> ProcessOutcome {
        let result = ServerLocked<Result<ProcessOutcome, any Error>?>(nil)
        let services = self.services
        thread.onLoop { _ in
            do {
                let process = try services.value.launch(spec) { outcome in
                    result.update { $0 = .success(outcome) }
                }
                started?(process)
            } catch {
                result.update { $0 = .failure(error) }
            }
        }
        guard serverWaitUntil(timeout: timeout, { result.value != nil }) else {
            throw ServerTestClient.Failure(description: "process did not finish in time")
        }
        return try result.value!.get()
    }
}

/// True when `pid` no longer runs (gone, or a zombie nobody reaped yet).
private func isGone(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
    guard let close = stat.lastIndex(of: ")") else { return true }
    let state = stat[stat.index(close, offsetBy: 2)]
    return state == "Z" || state == "X"
}

@Suite("UVLoopServices")
struct UVLoopServicesTests {
    @Test("a process's stdout comes back with exit status 0")
    func echo() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let outcome = try harness.run(ProcessSpec(argv: ["echo", "hello"]))
        #expect(outcome.exitStatus == 0)
        #expect(outcome.signal == nil)
        #expect(outcome.stdout == Array("hello\n".utf8))
        #expect(outcome.stderr.isEmpty)
        #expect(!outcome.stdoutTruncated)
    }

    @Test("stdin bytes are fed to the process, then closed")
    func stdinFed() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let input = Array("{\"value\":42}".utf8)
        let outcome = try harness.run(ProcessSpec(argv: ["cat"], stdin: input))
        #expect(outcome.exitStatus == 0)
        #expect(outcome.stdout == input)
    }

    @Test("a large stdin is fed whole even though it passes the pipe's buffer")
    func largeStdin() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let input = [UInt8](repeating: 0x41, count: 1 << 20)
        let outcome = try harness.run(ProcessSpec(argv: ["wc", "-c"], stdin: input))
        #expect(String(decoding: outcome.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "1048576")
    }

    @Test("a process that does not read its stdin still finishes normally")
    func stdinIgnored() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let outcome = try harness.run(ProcessSpec(argv: ["true"], stdin: [UInt8](repeating: 1, count: 1 << 20)))
        #expect(outcome.exitStatus == 0)
    }

    @Test("exit statuses come back as they are")
    func exitStatus() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        #expect(try harness.run(ProcessSpec(argv: ["sh", "-c", "exit 3"])).exitStatus == 3)
        #expect(try harness.run(ProcessSpec(argv: ["sh", "-c", "exit 255"])).exitStatus == 255)
    }

    @Test("a process killed by a signal reports 128 + the signal")
    func killedBySignal() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let outcome = try harness.run(ProcessSpec(argv: ["sh", "-c", "kill -9 $$"]))
        #expect(outcome.exitStatus == 137)
        #expect(outcome.signal == SIGKILL)
    }

    @Test("stdout is kept up to the limit and marked truncated; stderr keeps its end")
    func outputLimits() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        // stderr is written first: past the stdout limit the command is killed, so
        // whatever it would write after that may never be written.
        let outcome = try harness.run(ProcessSpec(
            argv: ["sh", "-c", "printf 0123456789abcdefghij >&2; printf 0123456789ABCDEFGHIJ; exit 1"],
            outputLimit: 10))
        // Its own exit, or the kill at the limit if that came first.
        #expect(outcome.exitStatus == 1 || outcome.exitStatus == 137, "\(outcome.exitStatus)")
        #expect(outcome.stdout == Array("0123456789".utf8))
        #expect(outcome.stdoutTruncated)
        #expect(outcome.stderr == Array("abcdefghij".utf8))
    }

    @Test("a long stderr keeps exactly its last bytes")
    func longStderrTail() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let outcome = try harness.run(ProcessSpec(
            argv: ["sh", "-c", "seq 1 100000 >&2; echo THE-END >&2"], outputLimit: 100))
        #expect(outcome.stderr.count == 100)
        #expect(String(decoding: outcome.stderr, as: UTF8.self).hasSuffix("99999\n100000\nTHE-END\n"))
    }

    @Test("env is laid over the daemon's environment, and cwd is honoured")
    func environmentAndDirectory() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let outcome = try harness.run(ProcessSpec(
            argv: ["sh", "-c", "echo $KEPT $EXTRA; pwd"], cwd: "/usr", env: ["EXTRA": "added"]))
        #expect(String(decoding: outcome.stdout, as: UTF8.self) == "daemon added\n/usr\n")
    }

    @Test("a program that does not exist makes launch throw ENOENT")
    func missingProgram() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        #expect {
            _ = try harness.run(ProcessSpec(argv: ["/nonexistent/program"]))
        } throws: { error in
            (error as? UVError)?.name == "ENOENT"
        }
        #expect(harness.runningCount() == 0)
    }

    @Test("an empty argv makes launch throw")
    func emptyArgv() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        #expect(throws: UVError.self) {
            _ = try harness.run(ProcessSpec(argv: []))
        }
    }

    @Test("terminate stops the whole process group, grandchildren included")
    func terminateKillsGroup() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let directory = ServerTestDirectory()
        defer { directory.remove() }
        let pidFile = directory.path + "/grandchild"
        let started = harness.launch(ProcessSpec(
            argv: ["sh", "-c", "sleep 100 & echo $! > \(pidFile).tmp; mv \(pidFile).tmp \(pidFile); sleep 100"]))
        #expect(serverWaitUntil { FileManager.default.fileExists(atPath: pidFile) })
        let text = try String(contentsOfFile: pidFile, encoding: .utf8)
        let grandchild = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(!isGone(grandchild))

        harness.terminate(started, graceMilliseconds: 5_000)
        let outcome = try started.outcome()
        #expect(outcome.exitStatus == 128 + SIGTERM)
        #expect(outcome.signal == SIGTERM)
        #expect(serverWaitUntil { isGone(grandchild) })
    }

    @Test("a process group that ignores SIGTERM is killed after the grace period")
    func terminateEscalates() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let directory = ServerTestDirectory()
        defer { directory.remove() }
        let ready = directory.path + "/ready"
        let started = harness.launch(ProcessSpec(
            argv: ["sh", "-c", "trap '' TERM; touch \(ready); sleep 100"]))
        #expect(serverWaitUntil { FileManager.default.fileExists(atPath: ready) })
        let clock = ContinuousClock()
        let begin = clock.now
        harness.terminate(started, graceMilliseconds: 300)
        let outcome = try started.outcome()
        #expect(outcome.exitStatus == 128 + SIGKILL)
        #expect(clock.now - begin >= .milliseconds(250))
    }

    @Test("onExit runs exactly once")
    func onExitOnce() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let started = harness.launch(ProcessSpec(argv: ["true"]))
        _ = try started.outcome()
        usleep(400_000)
        #expect(started.exitCount.value == 1)
        #expect(harness.runningCount() == 0)
    }

    @Test("a background grandchild holding stdout open does not delay the outcome")
    func backgroundHolderDoesNotDelay() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let directory = ServerTestDirectory()
        defer { directory.remove() }
        let pidFile = directory.path + "/holder"
        let clock = ContinuousClock()
        let begin = clock.now
        let outcome = try harness.run(ProcessSpec(
            argv: ["sh", "-c", "sleep 30 & echo $! > \(pidFile); echo out"]))
        #expect(clock.now - begin < .seconds(5))
        #expect(outcome.exitStatus == 0)
        #expect(outcome.stdout == Array("out\n".utf8))
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
           let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGKILL)
        }
    }

    @Test("on this kernel (pidfd_open) commands start with posix_spawn, not libuv's forking uv_spawn")
    func posixSpawnIsPreferred() {
        #expect(ProcessStarter.preferred == .posixSpawn)
    }

    @Test("the uv_spawn fallback still feeds stdin, keeps stdout, and reports status, signal and ENOENT",
          arguments: [ProcessStarter.uvSpawn, .posixSpawn])
    func bothStarters(starter: ProcessStarter) throws {
        let harness = try UVServicesHarness(starter: starter)
        defer { harness.stop() }
        let echoed = try harness.run(ProcessSpec(argv: ["cat"], stdin: Array("in".utf8)))
        #expect(echoed.exitStatus == 0)
        #expect(echoed.stdout == Array("in".utf8))
        #expect(try harness.run(ProcessSpec(argv: ["sh", "-c", "exit 7"])).exitStatus == 7)
        let killed = try harness.run(ProcessSpec(argv: ["sh", "-c", "kill -TERM $$"]))
        #expect(killed.exitStatus == 128 + SIGTERM)
        #expect(killed.signal == SIGTERM)
        #expect {
            _ = try harness.run(ProcessSpec(argv: ["true"], cwd: "/nonexistent/folder"))
        } throws: { error in
            (error as? UVError)?.description == "uv_spawn: no such file or directory (ENOENT)"
        }
        #expect(harness.runningCount() == 0)
    }

    @Test("a scheduled timer fires once, after its delay, on the loop thread")
    func timerFires() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let fired = ServerLocked<[Bool]>([])
        let services = harness.services
        let executor = harness.thread.executor
        let clock = ContinuousClock()
        let begin = clock.now
        harness.thread.onLoop { _ in
            _ = services.value.schedule(afterMilliseconds: 50) {
                let onLoop = executor.isLoopThread
                fired.update { $0.append(onLoop) }
            }
        }
        #expect(serverWaitUntil { fired.value.count == 1 })
        #expect(clock.now - begin >= .milliseconds(45))
        usleep(100_000)
        #expect(fired.value == [true])
    }

    @Test("a cancelled timer never fires")
    func timerCancelled() throws {
        let harness = try UVServicesHarness()
        defer { harness.stop() }
        let fired = ServerLocked(0)
        let services = harness.services
        harness.thread.onLoop { _ in
            let timer = services.value.schedule(afterMilliseconds: 30) { fired.update { $0 += 1 } }
            timer.cancel()
            timer.cancel()
        }
        usleep(150_000)
        #expect(fired.value == 0)
    }
}
