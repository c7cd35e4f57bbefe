import Foundation
import Promise
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `publish`: a local promise made known to other processes by id, settled
/// as the local one settles, cancelled both ways, leased to its connection.
@Suite("PromiseConnection: publishing local promises")
struct PromiseConnectionPublishTests {
    @Test("a published promise exists when publish returns, and settles with the local value for a waiting script")
    func publishResolves() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        let local = Promise<[String: Int]>()
        let record = try await remote.publish(local, as: "build/lib", name: "library")
        #expect(record.state == .pending)
        #expect(record.lease)
        #expect(record.name == "library")

        let waiter = try daemon.startCtl("wait", "build/lib", "--timeout", "20")
        local.fulfill(["objects": 12])
        let waited = try waiter.finish()
        #expect(waited.status == 0, "\(waited)")
        #expect(waited.stdout == "{\"objects\":12}\n")
    }

    @Test("a local rejection rejects the id with its code and message; a local cancel cancels it")
    func publishRejectsAndCancels() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        let failing = Promise<Int>()
        let stopped = Promise<Int>()
        try await remote.publish(failing, as: "failing")
        try await remote.publish(stopped, as: "stopped")
        let failingMirror = remote.promise("failing", as: Int.self)
        let stoppedMirror = remote.promise("stopped", as: Int.self)
        failing.reject(RemoteRejection(code: 2, message: "make failed"))
        stopped.cancel()

        let error = await #expect(throws: RemoteRejection.self) { try await failingMirror.value }
        #expect(error == RemoteRejection(code: 2, message: "make failed", origin: "failing"))
        await #expect(throws: CancellationError.self) { try await stoppedMirror.value }
        #expect(try await remote.get("stopped").state == .cancelled)
    }

    @Test("cancelling the id from another process cancels the local promise and what follows it")
    func remoteCancelCancelsLocal() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        let local = Promise<Int>()
        let next = local.then { $0 + 1 }
        try await remote.publish(local, as: "job")
        #expect(try daemon.ctl("cancel", "job").status == 0)
        await #expect(throws: CancellationError.self) { try await next.value }
        #expect(local.isCancelled)
    }

    @Test("progress reported on the local promise reaches the daemon's record")
    func progressToDaemon() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        let local = Promise<Int>()
        try await remote.publish(local, as: "upload")
        local.reportProgress(0.25)
        local.reportProgress(0.75)
        var progress: Double?
        for _ in 0..<500 where progress != 0.75 {
            progress = try await remote.get("upload").progress
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(progress == 0.75)
        local.fulfill(1)
        #expect(try await remote.wait("upload", timeout: .seconds(10)).value == 1)
    }

    @Test("publishing on an id that is taken throws exists, and the local promise is not tied to it")
    func publishOnTakenID() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("taken")
        let local = Promise<Int>()
        let error = await #expect(throws: PromiseConnectionError.self) { try await remote.publish(local, as: "taken") }
        #expect(error?.code == .exists)
        local.fulfill(9)
        _ = try await remote.call("info")
        #expect(try await remote.get("taken").state == .pending)
    }

    @Test("a published id is rejected when the publishing process is killed")
    func publisherCrash() async throws {
        let daemon = try E2EDaemon()
        defer { daemon.stop() }
        let id = E2E.uniqueID("crash")
        let child = try E2ECommand.start(
            URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path, ["--testing-library", "swift-testing", "--filter", "PublishingChild"],
            environment: [PublishingChild.socketVariable: daemon.socketPath, PublishingChild.idVariable: id])
        defer { if child.process.isRunning { kill(child.pid, SIGKILL) } }

        let remote = try await PromiseConnection.connect(socketPath: daemon.socketPath)
        defer { remote.close() }
        let mirror = remote.promise(id, as: Int.self)
        let published = E2E.eventually(timeout: .seconds(60)) {
            (try? daemon.client().call("get", ["id": .string(id)]))?["lease"] == true
        }
        #expect(published, "the child did not publish: \(child.stdoutSoFar) \(child.stderrSoFar)")
        #expect(mirror.isPending)

        kill(child.pid, SIGKILL)
        let error = await #expect(throws: RemoteRejection.self) { try await mirror.value }
        #expect(error?.message == "lease expired: the connection that created it closed")
        #expect(error?.origin == id)
    }
}

/// The process that ``PromiseConnectionPublishTests/publisherCrash()`` kills:
/// the test binary run again with a filter, and only then enabled.
@Suite("PromiseConnection: the publishing child process")
struct PublishingChild {
    static let socketVariable = "PROMISE_E2E_PUBLISHING_CHILD_SOCKET"
    static let idVariable = "PROMISE_E2E_PUBLISHING_CHILD_ID"
    static var isRequested: Bool { ProcessInfo.processInfo.environment[socketVariable] != nil }

    @Test("publishes a promise that never settles, then waits to be killed", .enabled(if: isRequested))
    func publishAndWait() async throws {
        let environment = ProcessInfo.processInfo.environment
        let remote = try await PromiseConnection.connect(socketPath: environment[Self.socketVariable])
        let never = Promise<Int>()
        let record = try await remote.publish(never, as: try #require(environment[Self.idVariable]))
        #expect(record.lease)
        try await Task.sleep(for: .seconds(60))
        remote.close()
    }
}
