import Foundation
import Promise
@testable import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// `wait` on a PromiseConnection: given up (a cancelled task, a cancelled
/// promise, a timeout), it leaves nothing behind on the daemon or in the
/// connection's tables.
@Suite("PromiseConnection: waits")
struct PromiseConnectionWaitTests {
    /// A daemon that lets 20 waits and 20 subscriptions at most wait for ids not created yet.
    private static func daemonWithFewUncreatedWaits() async throws -> (E2EDaemon, PromiseConnection) {
        let daemon = try E2EDaemon(extraArguments: [
            "--max-waiters-for-uncreated-ids", "20", "--max-subscriptions-to-uncreated-ids", "20",
        ])
        do {
            return (daemon, try await PromiseConnection.connect(socketPath: daemon.socketPath))
        } catch {
            daemon.stop()
            throw error
        }
    }

    /// What the connection still holds: requests in flight, subscribed ids, watchers.
    private static func held(_ remote: PromiseConnection) -> [Int] {
        let counts = remote.core.tableCounts
        return [counts.requests, counts.subscribedIDs, counts.watchers]
    }

    /// A wait for `id`, which does not exist yet, answered once another connection creates and resolves it.
    private static func waitStillServed(_ remote: PromiseConnection, _ daemon: E2EDaemon, id: String) async throws {
        let after = remote.calls.wait(id)
        _ = try await remote.call("info")
        #expect(try daemon.ctl("create", id).status == 0)
        #expect(try daemon.ctl("resolve", id, "1").status == 0)
        #expect(try await after.value.value == 1)
    }

    @Test("100 waits cancelled as promises, five times the daemon's limit for uncreated ids, leave nothing held")
    func cancelledPromiseWaitsWithdrawn() async throws {
        let (daemon, remote) = try await Self.daemonWithFewUncreatedWaits()
        defer { remote.close(); daemon.stop() }
        for round in 0..<5 {
            let waits = (0..<20).map { remote.calls.wait("never/\(round)/\($0)") }
            // Each subscribe is answered before this: none was refused.
            _ = try await remote.call("info")
            for wait in waits {
                #expect(wait.isPending)
                wait.cancel()
            }
        }
        _ = try await remote.call("info")
        #expect(Self.held(remote) == [0, 0, 0])
        try await Self.waitStillServed(remote, daemon, id: "after")
    }

    @Test("waits of cancelled tasks, more than the daemon's limit for uncreated ids, are withdrawn")
    func cancelledTaskWaitsWithdrawn() async throws {
        let (daemon, remote) = try await Self.daemonWithFewUncreatedWaits()
        defer { remote.close(); daemon.stop() }
        for round in 0..<3 {
            let started = (0..<20).map { _ in Promise<Void>() }
            let outcomes = (0..<20).map { index in
                Promise<PromiseRecord> {
                    started[index].fulfill(())
                    return try await remote.wait("never/\(round)/\(index)")
                }
            }
            _ = try await Promise.all(started).value
            _ = try await remote.call("info")
            for outcome in outcomes { outcome.cancel() }
            // A cancelled Promise { } settles cancelled at once; its task ends when it gets a thread.
            for outcome in outcomes { #expect(outcome.isCancelled) }
        }
        // The tasks end on the cooperative pool, which other suites keep busy: a generous bound.
        #expect(E2E.eventually(timeout: .seconds(300)) { Self.held(remote) == [0, 0, 0] })
        _ = try await remote.call("info")
        try await Self.waitStillServed(remote, daemon, id: "after")
    }

    @Test("a wait that times out throws timedOut with the pending record, or none for an id not created; nothing stays held")
    func timeout() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("slow")
        let pending = await #expect(throws: PromiseConnectionError.self) {
            try await remote.wait("slow", timeout: .milliseconds(100))
        }
        #expect(pending?.code == .timedOut)
        #expect(pending?.rpcCode == -32005)
        #expect(pending?.message == "promise \"slow\" did not settle within 100 ms")
        #expect(pending?.record?.state == .pending)
        let missing = await #expect(throws: PromiseConnectionError.self) {
            try await remote.wait("absent", timeout: .milliseconds(50))
        }
        #expect(missing?.code == .timedOut)
        #expect(missing?.record == nil)
        #expect(missing?.data == ["id": "absent"])
        _ = try await remote.call("info")
        #expect(Self.held(remote) == [0, 0, 0])

        // Answered before their timeouts (one of a month, one of a thousand years): the record, once.
        let answered = remote.calls.wait("slow", timeout: .seconds(60))
        let month = remote.calls.wait("slow", timeout: .seconds(31 * 86400))
        let forever = remote.calls.wait("slow", timeout: .seconds(1000 * 365 * 86400))
        try await remote.resolve("slow", with: "done")
        #expect(try await answered.value.value == "done")
        #expect(try await month.value.value == "done")
        #expect(try await forever.value.value == "done")
    }
}
