import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseClient
#endif

/// Slow, stuck and flooding clients against a real `promised`: one that
/// floods requests and never reads, one that sends a request a byte every
/// 100 ms, enough idle ones to reach `--max-connections`, and one that
/// half-closes after a `wait`. Meanwhile a well-behaved client keeps getting
/// every answer quickly, and each hostile client gets what the protocol
/// promises it (docs/PROTOCOL.md, "Connections").
@Suite("hostile clients do not hold up the others")
struct HostileClientTests {
    static let maxConnections = 32
    static let maxOutputBufferBytes = 256 * 1024

    /// Runs `body` on a thread of its own (the hostile clients block in
    /// `send`); the returned semaphore is signalled when it ends.
    private func onThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            body()
            done.signal()
        }
        return done
    }

    @Test("a flooder, a 1-byte-per-100-ms sender, a full connection table and a half-closed waiter leave others answered within milliseconds")
    func othersKeepGettingAnswers() throws {
        let daemon = try E2EDaemon(extraArguments: [
            "--max-connections", "\(Self.maxConnections)", "--reserved-connections", "0",
            "--max-output-buffer-bytes", "\(Self.maxOutputBufferBytes)",
        ])
        defer { daemon.stop() }
        let client = try daemon.client(timeout: .seconds(5))
        let resolver = try daemon.client(timeout: .seconds(5))
        let bigIDs = (0..<100).map { "big/\($0)" }

        // (a) Subscribes to ids that will settle with big values, then floods
        // `list` requests and never reads: first slowed down (the daemon stops
        // reading it), then cut off once the notifications pile up.
        let flooder = try E2ERawConnection(path: daemon.socketPath)
        let flooderFD = flooder.fd
        let subscribe: JSONValue = [
            "jsonrpc": "2.0", "id": "sub", "method": "subscribe",
            "params": ["ids": .array(bigIDs.map { .string($0) })],
        ]
        let floodLine = Array(#"{"jsonrpc":"2.0","id":1,"method":"list","params":{"limit":100}}"#.utf8) + [0x0A]
        let flood = Array([[UInt8]](repeating: floodLine, count: 64).joined())
        let flooderDone = onThread {
            guard E2ERawConnection.sendAll(flooderFD, subscribe.serialized() + [0x0A]) else { return }
            while E2ERawConnection.sendAll(flooderFD, flood) {}
        }
        var flooderEnded = false
        defer {
            if !flooderEnded {
                shutdown(flooderFD, Int32(SHUT_RDWR))  // unblocks its send: it was never cut off
                _ = flooderDone.wait(timeout: .now() + 5)
            }
            withExtendedLifetime(flooder) {}  // its descriptor stays open while the thread may use it
        }

        // (b) Sends its request a byte every 100 ms, from just before the measurement on.
        let slow = try E2ERawConnection(path: daemon.socketPath)

        // (d) A wait, then shutdown of the writing side.
        var halfClosed: E2ERawConnection? = try E2ERawConnection(path: daemon.socketPath)
        halfClosed?.writeLine(#"{"jsonrpc":"2.0","id":"hw","method":"wait","params":{"id":"half"}}"#)
        shutdown(halfClosed!.fd, Int32(SHUT_WR))

        // (c) Idle connections up to the limit; one more is refused with -32004 and closed.
        let ours = 5  // client, resolver, flooder, slow, halfClosed
        func connections() throws -> Int? { try client.call("info")["connections"]?.intValue }
        #expect(try E2E.eventually { try connections() == ours }, "connections: \(String(describing: try? connections()))")
        var idle: [E2ERawConnection] = []
        for _ in ours..<Self.maxConnections { idle.append(try E2ERawConnection(path: daemon.socketPath)) }
        #expect(try E2E.eventually { try connections() == Self.maxConnections })
        let refused = try E2ERawConnection(path: daemon.socketPath)
        let refusal = try refused.readMessage()
        #expect(refusal?["error"]?["code"] == -32004, "\(String(describing: refusal))")
        #expect(refusal?["id"] == .null)
        #expect(refusal?["error"]?["data"]?["limit"] == "maxConnections")
        #expect(refusal?["error"]?["data"]?["value"] == .int(Self.maxConnections))
        #expect(refused.drainUntilClosed(timeout: .seconds(5)).closed)

        let slowFD = slow.fd
        let slowRequest = Array(#"{"jsonrpc":"2.0","id":"slow","method":"info"}"#.utf8) + [0x0A]
        let slowDone = onThread {
            for byte in slowRequest {
                guard E2ERawConnection.sendAll(slowFD, [byte]) else { return }
                usleep(100_000)
            }
        }
        var slowEnded = false
        defer {
            if !slowEnded {
                shutdown(slowFD, Int32(SHUT_RDWR))
                _ = slowDone.wait(timeout: .now() + 5)
            }
            withExtendedLifetime(slow) {}
        }

        // The well-behaved client, while all of the above is going on.
        var latencies: [Duration] = []
        for round in 0..<200 {
            let started = ContinuousClock.now
            if round % 2 == 0 {
                let record = try client.call("create", ["id": .string("good/\(round)")])
                #expect(record["state"] == "pending")
            } else {
                let record = try client.call("get", ["id": .string("good/\(round - 1)")])
                #expect(record["id"] == .string("good/\(round - 1)"))
            }
            latencies.append(ContinuousClock.now - started)
        }
        latencies.sort()
        let median = latencies[latencies.count / 2]
        let slowest = latencies[latencies.count - 1]
        print("HostileClientTests: well-behaved round trips: median \(median), slowest \(slowest)")
        #expect(median < .milliseconds(20), "median \(median), slowest \(slowest)")
        #expect(slowest < .seconds(1), "median \(median), slowest \(slowest)")
        // The hostile clients were still there the whole time.
        #expect(slowDone.wait(timeout: .now()) == .timedOut, "the slow sender finished before the measurement did")
        #expect(try connections() == Self.maxConnections)

        // (d) The half-closed client still gets its wait answered.
        try resolver.call("create", ["id": "half"])
        try resolver.call("resolve", ["id": "half", "value": "done"])
        let waited = try halfClosed?.readMessage()
        #expect(waited?["id"] == "hw")
        #expect(waited?["result"]?["state"] == "fulfilled")
        #expect(waited?["result"]?["value"] == "done")

        // (b) The slow request is answered once its last byte is in.
        slowEnded = slowDone.wait(timeout: .now() + 10) == .success
        #expect(slowEnded)
        let slowAnswer = try slow.readMessage()
        #expect(slowAnswer?["id"] == "slow")
        #expect(slowAnswer?["result"]?["protocol"] == 1)

        // (a) Notifications pile up for the flooder until it is cut off; the daemon stays up.
        let big = JSONValue.string(String(repeating: "x", count: 16 * 1024))
        for id in bigIDs {
            try resolver.call("create", ["id": .string(id)])
            try resolver.call("resolve", ["id": .string(id), "value": big])
        }
        #expect(E2E.eventually(timeout: .seconds(10)) { daemon.log.contains("Cutting off a client") },
                "the daemon never cut the flooder off; log: \(daemon.log.suffix(2000))")
        #expect(flooder.drainUntilClosed(timeout: .seconds(10)).closed, "the flooder's socket never reached its end")
        flooderEnded = flooderDone.wait(timeout: .now() + 5) == .success
        #expect(flooderEnded, "the flooder's writes still succeed")
        #expect(daemon.isRunning)
        #expect(try client.call("get", ["id": "good/0"])["state"] == "pending")
        #expect(try E2E.eventually { try connections() == Self.maxConnections - 1 },  // the flooder is gone
                "connections: \(String(describing: try? connections()))")
        // The half-closed connection stays open for writing until the client closes it too.
        halfClosed = nil
        #expect(try E2E.eventually(timeout: .seconds(10)) { try connections() == Self.maxConnections - 2 },
                "connections: \(String(describing: try? connections()))")
        idle.removeAll()
        #expect(try E2E.eventually { try connections() == 3 }, "connections: \(String(describing: try? connections()))")
    }

    /// The lines of a read already in hand (up to 64 KiB of requests) wait
    /// while the connection is paused; before they did, their large answers
    /// passed the limit inside one read and a client that reads was cut off.
    @Test("a client that pipelines requests with large answers, and reads them, is slowed down, not cut off")
    func pipeliningClientIsNotCutOff() throws {
        let daemon = try E2EDaemon(extraArguments: ["--max-output-buffer-bytes", "\(Self.maxOutputBufferBytes)"])
        defer { daemon.stop() }
        let client = try daemon.client(timeout: .seconds(5))
        let name = JSONValue.string(String(repeating: "n", count: 200))
        for index in 0..<100 { try client.call("create", ["id": .string("p/\(index)"), "name": name]) }
        // 300 requests (21 KiB, one read for the daemon) whose answers hold 100 records each (~30 KiB).
        let count = 300
        let line = #"{"jsonrpc":"2.0","id":1,"method":"list","params":{"limit":100}}"# + "\n"
        let raw = try E2ERawConnection(path: daemon.socketPath)
        #expect(raw.write(Array(String(repeating: line, count: count).utf8)))
        var answers = 0
        while answers < count, let answer = try raw.readMessage(timeout: .seconds(5)) {
            if answer["result"]?["promises"]?.arrayValue?.count == 100 { answers += 1 }
        }
        #expect(answers == count, "\(answers) of \(count) answers before the connection ended; log: \(daemon.log.suffix(300))")
        #expect(daemon.isRunning)
        #expect(try client.call("get", ["id": "p/0"])["state"] == "pending")
    }
}
