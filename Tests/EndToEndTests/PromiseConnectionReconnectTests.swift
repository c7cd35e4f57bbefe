import Foundation
import Promise
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Synchronization
import Testing

/// A PromiseConnection across a `kill -9` and restart of a durable daemon:
/// it connects again, subscribes again, takes its leases back, and sends
/// again what was waiting.
@Suite("PromiseConnection: reconnecting")
struct PromiseConnectionReconnectTests {
    @Test("after a kill -9 and restart, 1,000 pending mirrors each settle once, a published lease is kept, a queued get is answered")
    func killAndRestart() async throws {
        let daemon = try E2EDurableDaemon.started(extraArguments: ["--lease-grace", "2s"])
        defer { daemon.remove() }
        let remote = try await PromiseConnection.connect(socketPath: daemon.socketPath)
        defer { remote.close() }
        let count = 1000
        let settlements = Atomic<Int>(0)
        // Half created before the kill, half created only after the restart.
        let setup = try daemon.client(timeout: .seconds(30))
        for result in try setup.batch((0..<count / 2).map { .init("create", ["id": .string("r/\($0)")]) }) {
            _ = try result.get()
        }
        setup.close()
        let mirrors = (0..<count).map { index in
            let mirror = remote.promise("r/\(index)", as: Int.self)
            mirror.onSettled(on: .inline) { _ in settlements.add(1, ordering: .relaxed) }
            return mirror
        }
        let local = Promise<String>()
        try await remote.publish(local, as: "published")
        _ = try await remote.call("info")

        daemon.kill9()
        let queued = remote.calls.get("published")
        try daemon.start()

        #expect(try queued.wait(timeout: .seconds(30)).state == .pending)
        // Past the lease grace: a lease not taken back would have been rejected by now.
        try await Task.sleep(for: .seconds(3))
        #expect(try await remote.get("published").state == .pending)
        local.fulfill("done")
        #expect(try await remote.wait("published", timeout: .seconds(10)).value == "done")

        let settler = try daemon.client(timeout: .seconds(30))
        defer { settler.close() }
        for start in stride(from: 0, to: count, by: 500) {
            let entries = (start..<start + 500).flatMap { index -> [BlockingPromiseClient.BatchEntry] in
                let id = JSONValue.string("r/\(index)")
                let create = index >= count / 2 ? [BlockingPromiseClient.BatchEntry("create", ["id": id])] : []
                return create + [.init("resolve", ["id": id, "value": .int(index)])]
            }
            for result in try settler.batch(entries) { _ = try result.get() }
        }
        let values = try await Promise.all(mirrors).value
        #expect(values == Array(0..<count))
        _ = try await remote.call("info")
        #expect(settlements.load(ordering: .relaxed) == count)
    }

    @Test("progress reported while the connection was down reaches mirrors and watches once it is back")
    func progressWhileAway() async throws {
        let daemon = try E2EDurableDaemon.started()
        defer { daemon.remove() }
        // Slow to come back, so that the progress is reported before this connection returns.
        let remote = try await PromiseConnection.connect(
            socketPath: daemon.socketPath, reconnect: ReconnectPolicy(initialDelay: .seconds(3), maximumDelay: .seconds(3)))
        defer { remote.close() }
        try await remote.create("job")
        let mirror = remote.promise("job", as: Int.self)
        // Watching from here, not from inside the task, which may start only after the restart.
        let watch = remote.watch(["job"])
        let events = Task {
            var seen: [PromiseEvent] = []
            for try await event in watch { seen.append(event) }
            return seen
        }
        _ = try await remote.call("info")

        daemon.kill9()
        try daemon.start()
        let reporter = try daemon.client(timeout: .seconds(30))
        defer { reporter.close() }
        _ = try reporter.call("progress", ["id": "job", "progress": 0.6, "message": "linking"])

        #expect(E2E.eventually(timeout: .seconds(60)) { mirror.progress == 0.6 })
        try await remote.resolve("job", with: 7)
        #expect(try await mirror.value == 7)
        let seen = try await events.value
        #expect(seen.count == 2)
        #expect(seen.first == .progress(id: "job", fraction: 0.6, message: "linking"))
        #expect(seen.last?.id == "job")
    }

    @Test("a resolve made while the daemon is away is sent once it is back")
    func writeWhileAway() async throws {
        let daemon = try E2EDurableDaemon.started()
        defer { daemon.remove() }
        let remote = try await PromiseConnection.connect(socketPath: daemon.socketPath)
        defer { remote.close() }
        try await remote.create("later")
        daemon.kill9()
        // Let the reader see the end first, so that the resolve is made while reconnecting.
        try await Task.sleep(for: .milliseconds(200))
        let resolved = remote.calls.resolve("later", with: 42)
        try daemon.start()
        #expect(try resolved.wait(timeout: .seconds(30)).value == 42)
    }

    @Test("a daemon that does not come back within giveUpAfter fails what waits with connectionLost")
    func givesUp() async throws {
        let daemon = try E2EDurableDaemon.started()
        defer { daemon.remove() }
        let remote = try await PromiseConnection.connect(
            socketPath: daemon.socketPath, reconnect: ReconnectPolicy(giveUpAfter: .milliseconds(500)))
        defer { remote.close() }
        let mirror = remote.promise("never", as: Int.self)
        _ = try await remote.call("info")
        daemon.kill9()
        let error = await #expect(throws: PromiseConnectionError.self) { try await mirror.value }
        #expect(error?.code == .connectionLost)
        #expect(error?.message.contains("could not connect again within") == true)
        #expect(!remote.isOpen)
    }
}
