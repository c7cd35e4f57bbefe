import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// Chains of 8,000 combinators, each over the previous one's id, on a durable
/// daemon: their roots time out or are settled across restarts, and the daemon
/// settles every link and stays up.
@Suite("chains of combinators across restarts", .serialized)
struct CombinatorChainRestartTests {
    static let length = 8_000

    /// `root` (with `timeoutMs`) and `length` `kind` combinators over it, in batches of 1,000.
    private func chain(_ kind: String, on connection: E2ERawConnection, timeoutMs: Int) throws -> String {
        try connection.call("create", ["id": .string("\(kind)/root"), "timeoutMs": .int(timeoutMs)])
        var previous = "\(kind)/root"
        for start in stride(from: 0, to: Self.length, by: 1_000) {
            var calls: [(method: String, params: JSONValue)] = []
            for index in start..<(start + 1_000) {
                let id = "\(kind)/\(index)"
                calls.append((kind, ["ids": [.string(previous)], "id": .string(id)]))
                previous = id
            }
            try connection.batch(calls)
        }
        return previous
    }

    @Test("chains of 8,000 all, any, race and allSettled over roots with a timeout settle across restarts")
    func chainsSettleAcrossRestarts() throws {
        try E2EDurableDaemon.with { daemon in
            let clock = ContinuousClock()
            let connection = try E2ERawConnection(path: daemon.socketPath)
            // These two are settled by hand after the restart.
            let allEnd = try chain("all", on: connection, timeoutMs: 600_000)
            let anyEnd = try chain("any", on: connection, timeoutMs: 600_000)
            // These two are made last and time out while the daemon is down (on a machine
            // slow enough to take longer to build them, before: the outcome is the same).
            let started = clock.now
            let shortTimeout = 30_000
            let raceEnd = try chain("race", on: connection, timeoutMs: shortTimeout)
            let settledEnd = try chain("allSettled", on: connection, timeoutMs: shortTimeout)
            let built = clock.now - started
            #expect(daemon.terminate() == 0, "\(daemon.logTail())")

            let remaining = Duration.milliseconds(shortTimeout) + .milliseconds(500) - (clock.now - started)
            if remaining > .zero { Thread.sleep(forTimeInterval: remaining / .seconds(1)) }
            // Restoring 80,000 promises and settling 40,000 of them takes a while in a debug build.
            daemon.kill9()
            try daemon.start(timeout: .seconds(180))
            let after = try E2ERawConnection(path: daemon.socketPath)
            try after.call("resolve", ["id": "all/root", "value": 1])
            try after.call("cancel", ["id": "any/root"])
            // `all` nests its value a level per link and passes maxValueDepth on the way;
            // `allSettled` and `any` alternate between fulfilled and rejected along the chain.
            let expected: [(end: String, state: String?)] = [
                (raceEnd, "rejected"), (settledEnd, nil), (allEnd, "rejected"), (anyEnd, nil),
            ]
            for (end, state) in expected {
                let record = try after.call("wait", ["id": .string(end), "timeoutMs": 60_000])
                #expect(record["state"]?.stringValue != "pending", "\(end): \(record)")
                if let state { #expect(record["state"]?.stringValue == state, "\(end): \(record)") }
            }
            #expect(try after.call("get", ["id": "race/root"])["reason"]?["code"] == -32005)
            #expect(try after.call("get", ["id": "any/root"])["state"] == "cancelled")
            #expect(try after.call("info")["promises"] != nil)
            #expect(daemon.isRunning)
            print("chains of \(Self.length): the timed two built in \(built); settled across a restart in \(clock.now - started)")

            // And once more, with every chain settled: the store opens again.
            #expect(daemon.terminate() == 0)
            daemon.kill9()
            try daemon.start(timeout: .seconds(180))
            #expect(try E2ERawConnection(path: daemon.socketPath).call("get", ["id": .string(allEnd)])["state"] == "rejected")
        }
    }
}
