import Foundation
import Promise
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// A value the tests send through the daemon and read back typed.
private struct Artifact: Codable, Sendable, Hashable {
    var path: String
    var bytes: Int
    var tags: [String]
}

/// PromiseConnection against the real daemon: typed requests, typed errors,
/// and mirrors of remote promises as core promises.
@Suite("PromiseConnection: typed requests and errors")
struct PromiseConnectionTests {
    @Test("create, resolve, get and wait answer typed records; the value reads back as the Codable struct")
    func typedRoundTrip() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        let artifact = Artifact(path: "lib/libfoo.a", bytes: 4096, tags: ["release", "x86_64"])

        let created = try await remote.create("build/lib", timeout: .seconds(600), lease: true, name: "library")
        #expect(created.id == "build/lib")
        #expect(created.state == .pending)
        #expect(created.name == "library")
        #expect(created.lease)
        #expect(created.json["timeoutMs"] == 600_000)

        let resolved = try await remote.resolve("build/lib", with: artifact)
        #expect(resolved.state == .fulfilled)
        #expect(resolved.value == ["path": "lib/libfoo.a", "bytes": 4096, "tags": ["release", "x86_64"]])
        #expect(try resolved.value(as: Artifact.self) == artifact)

        let fetched = try await remote.get("build/lib")
        #expect(try fetched.value(as: Artifact.self) == artifact)
        #expect(fetched.progress == 1)
        let waited = try await remote.wait("build/lib", timeout: .seconds(5))
        #expect(waited == fetched)

        // The daemon names ids left out.
        let made = try await remote.create()
        #expect(made.id.hasPrefix("p"))
    }

    @Test("reject and cancel answer records with the reason and its origin")
    func rejectAndCancel() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("a")
        try await remote.create("b")
        let rejected = try await remote.reject("a", reason: RemoteRejection(code: 2, message: "make failed"))
        #expect(rejected.state == .rejected)
        #expect(rejected.reason == RemoteRejection(code: 2, message: "make failed", origin: "a"))
        let cancelled = try await remote.cancel("b")
        #expect(cancelled.state == .cancelled)
        #expect(cancelled.reason?.message == "cancelled")
        let plain = try await remote.create("c")
        #expect(plain.reason == nil)
        #expect(try await remote.reject("c", message: "disk full").reason?.message == "disk full")
    }

    @Test("the daemon's errors come as typed errors with its message; an already settled one carries the record")
    func typedErrors() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("x")

        let exists = await #expect(throws: PromiseConnectionError.self) { try await remote.create("x") }
        #expect(exists?.code == .exists)
        #expect(exists?.rpcCode == -32006)
        #expect(exists?.message.contains("\"x\"") == true)

        try await remote.resolve("x", with: 1)
        let settled = await #expect(throws: PromiseConnectionError.self) { try await remote.resolve("x", with: 2) }
        #expect(settled?.code == .alreadySettled)
        #expect(settled?.record?.value == 1)

        let missing = await #expect(throws: PromiseConnectionError.self) { try await remote.get("nope") }
        #expect(missing?.code == .noSuchPromise)

        let invalid = await #expect(throws: PromiseConnectionError.self) { try await remote.create("bad\u{1}id") }
        #expect(invalid?.code == .invalidParams)

        let timedOut = await #expect(throws: PromiseConnectionError.self) {
            try await remote.wait("never", timeout: .milliseconds(50))
        }
        #expect(timedOut?.code == .timedOut)

        // The connection is still usable after every error.
        #expect(try await remote.get("x").value == 1)
    }

    @Test("nothing listening on the socket is unreachable, with the path in the message")
    func unreachable() async throws {
        let path = "/tmp/pe2e-none-\(UUID().uuidString.prefix(8)).sock"
        let error = await #expect(throws: PromiseConnectionError.self) {
            try await PromiseConnection.connect(socketPath: path)
        }
        #expect(error?.code == .unreachable)
        #expect(error?.message.contains(path) == true)
    }

    @Test("a call after close fails with closed; without reconnecting, a daemon that goes away fails what waits")
    func closedAndLost() async throws {
        let daemon = try E2EDaemon()
        defer { daemon.stop() }
        let remote = try await PromiseConnection.connect(socketPath: daemon.socketPath)
        remote.close()
        #expect(!remote.isOpen)
        let closed = await #expect(throws: PromiseConnectionError.self) { try await remote.get("a") }
        #expect(closed?.code == .closed)

        let other = try await PromiseConnection.connect(socketPath: daemon.socketPath, reconnect: .never)
        let waiting = other.calls.wait("forever")
        kill(daemon.pid, SIGKILL)
        let lost = #expect(throws: PromiseConnectionError.self) { try waiting.wait(timeout: .seconds(10)) }
        #expect(lost?.code == .connectionLost)
        #expect(!other.isOpen)
    }

    @Test("a cancelled task stops awaiting a wait at once; the connection serves on")
    func cancelledAwait() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        let ended = Promise<String>()
        let waiting = Task {
            do {
                _ = try await remote.wait("never")
                ended.fulfill("answered")
            } catch is CancellationError {
                ended.fulfill("cancelled")
            } catch {
                ended.fulfill("\(error)")
            }
        }
        _ = try await remote.call("info")
        waiting.cancel()
        // The cancelled task needs a thread of the cooperative pool to end,
        // and in the full suite the other tests hold both (two cores) for
        // minutes: the bound is that long. Without cancellation the await
        // would never end, for "never" is never settled.
        #expect(try await ended.timeout(.seconds(300)).value == "cancelled")
        try await remote.create("after")
        #expect(try await remote.get("after").state == .pending)
    }

    @Test("the promise forms serve plain threads: wait(timeout:) on each, and the core's combinators over them")
    func promiseForms() throws {
        let daemon = try E2EDaemon()
        defer { daemon.stop() }
        let remote = try PromiseConnection.connectNow(socketPath: daemon.socketPath)
        defer { remote.close() }
        let created = Promise.all((0..<100).map { remote.calls.create("job/\($0)") })
        #expect(try created.wait(timeout: .seconds(10)).map(\.id) == (0..<100).map { "job/\($0)" })
        let resolved = try remote.calls.resolve("job/7", with: ["ok": true]).wait(timeout: .seconds(10))
        #expect(resolved.value == ["ok": true])
        let failed = #expect(throws: PromiseConnectionError.self) {
            try remote.calls.get("job/none").wait(timeout: .seconds(10))
        }
        #expect(failed?.code == .noSuchPromise)
        #expect(try remote.calls.call("info").wait(timeout: .seconds(10))["protocol"] == 1)
    }

    @Test("fifty tasks share one connection, every answer reaching its own caller")
    func concurrentCallers() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<50 {
                group.addTask {
                    for round in 0..<40 {
                        let id = "t\(task)/\(round)"
                        let created = try await remote.create(id)
                        let resolved = try await remote.resolve(id, with: task * 1000 + round)
                        #expect(created.id == id)
                        #expect(resolved.value == .int(task * 1000 + round))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await remote.call("info")["promises"] == 2000)
    }
}

extension E2EDaemon {
    /// A fresh daemon and a PromiseConnection to it; stop and close both in a `defer`.
    static func connected() async throws -> (E2EDaemon, PromiseConnection) {
        let daemon = try E2EDaemon()
        do {
            return (daemon, try await PromiseConnection.connect(socketPath: daemon.socketPath))
        } catch {
            daemon.stop()
            throw error
        }
    }
}
