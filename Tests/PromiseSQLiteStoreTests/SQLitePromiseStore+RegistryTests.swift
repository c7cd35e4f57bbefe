import Foundation
import Logging
import Promise
import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseDispatch
import PromiseRegistry
import PromiseSQLiteStore
import PromiseServer
import PromiseStore
import Testing

/// The daemon's stack — dispatcher, registry, group commit — over a real
/// SQLite store that refuses rows past 4,096 bytes, as SQLite refuses
/// any past 1 GB: the test's thread plays the loop and the writer.
@Suite("SQLitePromiseStore under the registry")
struct SQLitePromiseStoreRegistryTests {
    final class Peer: RPCPeer {
        let connectionID: UInt64
        var isOpen = true
        var lines: [JSONValue] = []

        init(_ connectionID: UInt64) { self.connectionID = connectionID }

        func send(_ message: [UInt8]) -> Bool {
            lines.append(try! JSONValue(parsing: Array(message.dropLast())))
            return true
        }
    }

    final class Services: LoopServices {
        final class Timer: ScheduledTimer {
            var body: (() -> Void)?
            init(_ body: @escaping () -> Void) { self.body = body }
            func cancel() { body = nil }
        }

        private var timers: [Timer] = []

        func schedule(afterMilliseconds milliseconds: UInt64, _ body: @escaping () -> Void) -> any ScheduledTimer {
            let timer = Timer(body)
            timers.append(timer)
            return timer
        }

        /// Fires every timer scheduled so far; returns how many there were.
        func fireTimers() -> Int {
            let due = timers.compactMap(\.body)
            timers = []
            due.forEach { $0() }
            return due.count
        }

        func launch(_ spec: ProcessSpec, onExit: @escaping (ProcessOutcome) -> Void) throws -> any RunningProcess {
            throw PromiseStoreError("no processes here")
        }
    }

    /// Queues the journal's loop work until ``drain()``.
    final class Loop: Executor, @unchecked Sendable {  // `lock` guards `queue`.
        private let lock = NSLock()
        private var queue: [@Sendable () -> Void] = []

        func execute(_ work: @escaping @Sendable () -> Void) { lock.withLock { queue.append(work) } }

        func drain() {
            while let work = lock.withLock({ queue.isEmpty ? nil : queue.removeFirst() }) { work() }
        }
    }

    private func request(_ id: Int, _ method: String, _ params: JSONValue) -> [UInt8] {
        let message: JSONValue = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": params]
        return Array(message.serialized())
    }

    @Test("a create too big to store is answered -32603 naming it; the creates committed with it are answered and stored; later changes are accepted")
    func tooBigRequestAlone() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory, maxLength: 4_096)
            let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
            let (loop, services) = (Loop(), Services())
            let journal = GroupCommit(store: store, loop: loop, writer: .inline, services: services, logger: logger)
            let registry = Registry(limits: DaemonLimits(), services: services, executor: .inline, journal: journal,
                                    logger: logger)
            let dispatcher = Dispatcher(registry: registry, limits: DaemonLimits(), logger: logger)
            let (alice, bob) = (Peer(1), Peer(2))
            dispatcher.connectionOpened(alice)
            dispatcher.connectionOpened(bob)

            // One turn of the loop: the three creates are cut and committed together.
            dispatcher.handle(line: request(1, "create", ["id": "a"]), from: alice)
            dispatcher.handle(line: request(2, "create", ["id": "big", "name": .string(String(repeating: "n", count: 5_000))]),
                              from: bob)
            dispatcher.handle(line: request(3, "create", ["id": "b"]), from: alice)
            loop.drain()

            #expect(alice.lines.map { $0["id"] } == [1, 3])
            #expect(alice.lines.map { $0["result"]?["state"] } == ["pending", "pending"])
            #expect(bob.lines.map { $0["id"] } == [2])
            #expect(bob.lines.first?["error"]?["code"] == -32603)
            #expect(bob.lines.first?["error"]?["message"]
                == #"the store cannot write: promise "big" cannot be stored: string or blob too big"#)
            #expect(try store.load().promises.map(\.id) == ["a", "b"])

            dispatcher.handle(line: request(4, "create", ["id": "c"]), from: bob)
            dispatcher.handle(line: request(5, "info", [:]), from: bob)
            loop.drain()
            #expect(bob.lines.dropFirst().first?["result"]?["id"] == "c")
            let info = try #require(bob.lines.last?["result"]?["store"])
            #expect(info["writable"] == true)
            #expect(info["unstorable"] == 1)
            #expect(try store.load().promises.map(\.id) == ["a", "b", "c"])
        }
    }

    @Test("a full disk still refuses the batch and every change after it, and retries every second, a row too big in the batch or not")
    func fullDiskStillRefusesAndRetries() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory, maxPageCount: 16, maxLength: 4_096)
            let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
            let (loop, services) = (Loop(), Services())
            let journal = GroupCommit(store: store, loop: loop, writer: .inline, services: services, logger: logger)
            let registry = Registry(limits: DaemonLimits(), services: services, executor: .inline, journal: journal,
                                    logger: logger)
            let dispatcher = Dispatcher(registry: registry, limits: DaemonLimits(), logger: logger)
            let peer = Peer(1)
            dispatcher.connectionOpened(peer)

            // 16 pages of 4 KiB hold a few promises with 2,000-byte names, not a hundred.
            let name = JSONValue.string(String(repeating: "n", count: 2_000))
            dispatcher.handle(line: request(0, "create", ["id": "big", "name": .string(String(repeating: "n", count: 5_000))]),
                              from: peer)
            for index in 1...100 {
                dispatcher.handle(line: request(index, "create", ["id": .string("f\(index)"), "name": name]), from: peer)
            }
            loop.drain()
            #expect(peer.lines.count == 101)
            #expect(peer.lines.allSatisfy { $0["error"]?["code"] == -32603 })
            #expect(peer.lines.last?["error"]?["data"]?["reason"]
                == .string("cannot write to the promise store \(store.path): database or disk is full"))
            #expect(try store.load().promises.isEmpty)

            peer.lines = []
            dispatcher.handle(line: request(200, "create", ["id": "after"]), from: peer)
            dispatcher.handle(line: request(201, "info", [:]), from: peer)
            loop.drain()
            #expect(peer.lines.first?["error"]?["code"] == -32603)
            #expect(peer.lines.last?["result"]?["store"]?["writable"] == false)
            #expect(peer.lines.last?["result"]?["store"]?["unstorable"] == 0)

            // The retry fails as long as the disk is full, and schedules the next one.
            #expect(services.fireTimers() == 1)
            loop.drain()
            #expect(journal.failure != nil)
            #expect(services.fireTimers() == 1)
        }
    }
}
