import Foundation
import PromiseClient
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseJSON
#endif

/// Connection floods and clients that hold memory without finishing their
/// work, against a real `promised` (docs/PROTOCOL.md, "Connections"): the
/// daemon keeps serving the clients already connected, cuts off the
/// clients holding the most once `--max-buffered-bytes` is reached, closes
/// lines left unfinished past `--line-timeout`, and closes refused clients
/// at once. The sizes are small and the limits set to match, so each test
/// takes seconds.
@Suite("floods and silent clients do not take the daemon's memory")
struct ConnectionMemoryTests {
    /// The daemon's resident memory in bytes (`VmRSS` in /proc/PID/status).
    private func residentBytes(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 2, let kilobytes = Int(fields[1]) { return kilobytes * 1_024 }
        }
        return nil
    }

    /// Pings on a connection of its own every 50 ms until ``finish()``,
    /// which returns the longest time one answer took, and whether every
    /// ping was answered.
    private final class Pinger: @unchecked Sendable {  // `lock` guards `longest`, `failed` and `stopped`.
        private let lock = NSLock()
        private var longest: Duration = .zero
        private var failed = false
        private var stopped = false
        private let done = DispatchSemaphore(value: 0)

        init(socketPath: String) {
            Thread.detachNewThread { [self] in
                guard let client = try? BlockingPromiseClient(socketPath: socketPath, timeout: .seconds(30)) else {
                    lock.withLock { failed = true }
                    done.signal()
                    return
                }
                while !isStopped {
                    let start = ContinuousClock.now
                    let answered = (try? client.call("info")) != nil
                    let took = ContinuousClock.now - start
                    lock.withLock {
                        longest = max(longest, took)
                        if !answered { failed = true }
                    }
                    Thread.sleep(forTimeInterval: 0.05)
                }
                done.signal()
            }
        }

        private var isStopped: Bool { lock.withLock { stopped } }

        func finish() -> (longest: Duration, allAnswered: Bool) {
            lock.withLock { stopped = true }
            done.wait()
            return lock.withLock { (longest, !failed) }
        }
    }

    /// Set once, read by many threads.
    private final class StopFlag: @unchecked Sendable {  // `lock` guards `value`.
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    /// A connection that sends its first `bytes` without a newline.
    private func halfLine(_ daemon: E2EDaemon, bytes: Int) throws -> E2ERawConnection {
        let raw = try E2ERawConnection(path: daemon.socketPath)
        let start = Array(#"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":""#.utf8)
        try #require(raw.write(start + [UInt8](repeating: UInt8(ascii: "a"), count: bytes - start.count)))
        return raw
    }

    @Test("during a flood of connections opened and closed at once, a connected client's pings are answered within 1 s and the daemon's memory stays bounded")
    func floodDoesNotStarveConnectedClients() throws {
        try E2EDaemon.with(extraArguments: ["--max-connections", "64", "--reserved-connections", "4"]) { daemon in
            let client = try daemon.client(timeout: .seconds(30))
            try client.call("info")
            let residentBefore = try #require(residentBytes(daemon.pid))
            let pinger = Pinger(socketPath: daemon.socketPath)
            let path = daemon.socketPath
            let stop = StopFlag()
            let threads = (0..<4).map { _ in DispatchSemaphore(value: 0) }
            for done in threads {
                Thread.detachNewThread {
                    while !stop.isSet {
                        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                        _ = UnixSocketAddress(path: path)?.connect(fd)
                        close(fd)
                    }
                    done.signal()
                }
            }
            Thread.sleep(forTimeInterval: 4)
            stop.set()
            threads.forEach { $0.wait() }
            let pings = pinger.finish()
            #expect(pings.allAnswered)
            #expect(pings.longest < .seconds(1), "longest ping during the flood: \(pings.longest)")
            // Every flooding connection is gone from the table.
            #expect(E2E.eventually(timeout: .seconds(10)) { (try? client.call("info")["connections"]?.intValue) == 1 })
            let residentAfter = try #require(residentBytes(daemon.pid))
            #expect(residentAfter - residentBefore < 16 << 20,
                    "resident memory grew from \(residentBefore) to \(residentAfter) bytes")
        }
    }

    @Test("silent subscribers are cut off once the daemon's buffers are full, the largest first; the others, the writer and a reader are still served")
    func silentSubscribersCutOffLargestFirst() throws {
        try E2EDaemon.with(extraArguments: ["--max-buffered-bytes", "\(3 << 20)"]) { daemon in
            let writer = try daemon.client()
            let reader = try daemon.client()
            try writer.call("create", ["id": "p"])
            try reader.call("subscribe", ["ids": ["p"]])
            let subscribe = #"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"ids":["p"]}}"#
            let first = try E2ERawConnection(path: daemon.socketPath)
            first.writeLine(subscribe)
            let message = String(repeating: "m", count: 60_000)
            // Subscribers are told of progress that moves forward only.
            var step = 0
            func progress(_ count: Int) throws {
                for _ in 0..<count {
                    step += 1
                    try writer.call("progress", ["id": "p", "progress": .double(Double(step) / 1_000), "message": .string(message)])
                    // The reader reads what it is sent.
                    while try reader.nextNotification(timeout: .milliseconds(1)) != nil {}
                }
            }
            try progress(25)
            let later = (0..<3).map { _ in try? E2ERawConnection(path: daemon.socketPath) }.compactMap { $0 }
            try #require(later.count == 3)
            later.forEach { $0.writeLine(subscribe) }
            try writer.call("info")  // the later subscriptions are in
            // The first holds about 25 messages more than the others: it goes when the budget is reached.
            var sent = 0
            while first.isOpenToDaemon && sent < 100 {
                try progress(1)
                sent += 1
            }
            let closed = first.drainUntilClosed(timeout: .seconds(10))
            #expect(closed.closed, "the largest silent subscriber is cut off")
            #expect(daemon.log.contains("the daemon's buffers are full"))
            for subscriber in later {
                #expect(subscriber.isOpenToDaemon, "a smaller silent subscriber is still connected")
            }
            #expect(try writer.call("info")["connections"] == 5)
            while try reader.nextNotification(timeout: .milliseconds(200)) != nil {}
            step += 1
            try writer.call("progress", ["id": "p", "progress": .double(Double(step) / 1_000)])
            #expect(try reader.nextNotification(timeout: .seconds(5))?.method == "progress")
        }
    }

    @Test("a progress message told to 100 subscribers that do not read is kept once: 360 MB queued for them take under 64 MB of the daemon's memory, and all stay connected")
    func silentSubscribersShareTheNotificationBytes() throws {
        try E2EDaemon.with(extraArguments: ["--max-buffered-bytes", "\(2 << 30)"]) { daemon in
            let writer = try daemon.client()
            try writer.call("create", ["id": "p"])
            let subscribe = #"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"ids":["p"]}}"#
            let silent = try (0..<100).map { _ in try E2ERawConnection(path: daemon.socketPath) }
            for subscriber in silent { try #require(subscriber.writeLine(subscribe)) }
            #expect(E2E.eventually(timeout: .seconds(10)) { (try? writer.call("info")["connections"]?.intValue) == 101 })
            let residentBefore = try #require(residentBytes(daemon.pid))
            let message = String(repeating: "m", count: 60_000)
            for step in 1...60 {
                try writer.call("progress", ["id": "p", "progress": .double(Double(step) / 100), "message": .string(message)])
            }
            let residentAfter = try #require(residentBytes(daemon.pid))
            // Copied for each, the messages would take 100 × 60 × 60 KB; shared, 60 × 60 KB.
            #expect(residentAfter - residentBefore < 64 << 20,
                    "resident memory grew from \(residentBefore) to \(residentAfter) bytes")
            #expect(try writer.call("info")["connections"] == 101)
            for subscriber in silent { #expect(subscriber.isOpenToDaemon, "a silent subscriber is still connected") }
        }
    }

    @Test("unfinished lines past the budget: the largest holder gets a maxBufferedBytes error line and is closed; the others finish their lines")
    func halfLinesPastBudgetCutLargest() throws {
        try E2EDaemon.with(extraArguments: ["--max-buffered-bytes", "1000000"]) { daemon in
            let small = try halfLine(daemon, bytes: 300_000)
            let large = try halfLine(daemon, bytes: 500_000)
            let client = try daemon.client()
            try client.call("info")
            let other = try halfLine(daemon, bytes: 300_000)
            let error = try #require(try large.readMessage(timeout: .seconds(10)))
            #expect(error["error"]?["code"] == -32004)
            #expect(error["error"]?["data"]?["limit"] == "maxBufferedBytes")
            #expect(error["error"]?["data"]?["value"] == 1_000_000)
            #expect(large.drainUntilClosed(timeout: .seconds(5)).closed)
            for raw in [small, other] {
                // Answered (an id that long is refused): the connection is served.
                try #require(raw.writeLine(#""}}"#))
                #expect(try raw.readMessage(timeout: .seconds(5))?["id"] == 1)
            }
        }
    }

    @Test("with --line-timeout 1, lines left unfinished get a lineTimeoutSeconds error and are closed within 2.5 s; finished ones are served")
    func unfinishedLinesTimeOut() throws {
        try E2EDaemon.with(extraArguments: ["--line-timeout", "1"]) { daemon in
            let client = try daemon.client()
            #expect(try client.call("info")["limits"]?["lineTimeoutSeconds"] == 1)
            let started = ContinuousClock.now
            let idle = try (0..<3).map { _ in try halfLine(daemon, bytes: 100_000) }
            let finishing = try halfLine(daemon, bytes: 1_000)
            Thread.sleep(forTimeInterval: 0.3)
            try #require(finishing.writeLine(#""}}"#))
            #expect(try finishing.readMessage()?["id"] == 1)
            for raw in idle {
                let error = try #require(try raw.readMessage(timeout: .seconds(5)))
                #expect(error["error"]?["code"] == -32004)
                #expect(error["error"]?["data"]?["limit"] == "lineTimeoutSeconds")
                #expect(error["error"]?["data"]?["flag"] == "--line-timeout")
                #expect(raw.drainUntilClosed(timeout: .seconds(5)).closed)
            }
            #expect(ContinuousClock.now - started < .milliseconds(2_500))
            #expect(E2E.eventually(timeout: .seconds(5)) { (try? client.call("info")["connections"]?.intValue) == 2 })
            #expect(finishing.isOpenToDaemon)
        }
    }

    @Test("clients refused a wait in the reserve are closed at once, though they stay connected; a resolver then gets in and releases the waiters")
    func refusedReserveClientsClosedAtOnce() throws {
        try E2EDaemon.with(extraArguments: ["--max-connections", "2", "--reserved-connections", "2"]) { daemon in
            // Both waiters in the table proper: the second once the harness's probe is gone.
            let first = try daemon.client()
            try first.call("create", ["id": "w"])
            #expect(E2E.eventually { (try? first.call("info")["connections"]?.intValue) == 1 })
            let waiters = [first, try daemon.client()]
            let waits = try waiters.map { try $0.send("wait", ["id": "w"]) }
            // Clients let into the reserve ask to wait, are refused, and keep their end open.
            var refused: [E2ERawConnection] = []
            for _ in 0..<6 {
                let raw = try E2ERawConnection(path: daemon.socketPath)
                raw.writeLine(#"{"jsonrpc":"2.0","id":1,"method":"wait","params":{"id":"w"}}"#)
                let answer = try #require(try raw.readMessage(timeout: .seconds(5)))
                #expect(answer["error"]?["code"] == -32004)
                #expect(answer["error"]?["data"]?["reserved"] == true || answer["error"]?["message"] == "too many connections (limit 2)")
                refused.append(raw)
            }
            for raw in refused {
                #expect(raw.drainUntilClosed(timeout: .seconds(1)).closed, "a refused client is closed by the daemon")
            }
            let resolved = try daemon.ctl("resolve", "w", "7")
            #expect(resolved.status == 0, "\(resolved)")
            for (waiter, id) in zip(waiters, waits) {
                #expect(try waiter.result(for: id)["value"] == 7)
            }
        }
    }
}

extension E2ERawConnection {
    /// Whether the daemon has not closed this connection, reading (and
    /// dropping) nothing: a `MSG_PEEK` without waiting.
    var isOpenToDaemon: Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if count == 0 { return false }
        if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK }
        // Bytes are waiting: open unless only the end follows them, which a peek cannot tell.
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, 0)
        return descriptor.revents & Int16(POLLHUP) == 0
    }
}
