import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// Requests whose work grows with what a client chose (an input repeated a
/// quarter of a million times, a parent with 100,000 children) do it in time
/// linear in that, and a second client pinging every 50 ms meanwhile is
/// answered within a bound generous for a loaded CI machine; the figures are
/// printed.
@Suite("long requests do not hold other clients", .serialized)
struct LongRequestStallTests {
    /// The worst wait for a ping these tests accept: work linear in the request
    /// (a few seconds in a debug build on a loaded machine), where quadratic work
    /// held every client for a minute in a release build.
    static let pingBound = Duration.seconds(30)
    /// The worst wait for a ping beside a batch, which runs a slice of about
    /// 5 ms a loop turn: generous for a debug daemon on a loaded machine
    /// (held for the whole batch, a ping waited seconds).
    static let batchPingBound = Duration.seconds(1)
    /// The worst wait for a ping beside a fan-out (a cancel or resolve
    /// reaching 100,000 descendants or more), whose propagation yields to the
    /// loop every 5 ms: generous for a debug daemon on a loaded machine (run
    /// in one turn, the propagation held a ping for about a second).
    static let fanOutPingBound = Duration.milliseconds(150)

    /// Creates "parent" and `count` `then` children of it, "kid/0" on, in batches of 1,000.
    static func makeParent(ofChildren count: Int, on connection: E2ERawConnection) throws {
        try connection.call("create", ["id": "parent"])
        for start in stride(from: 0, to: count, by: 1_000) {
            try connection.batch((start..<min(start + 1_000, count)).map { index in
                ("then", ["id": "parent", "childId": .string("kid/\(index)")])
            })
        }
    }

    @Test("cancelling an all over one pending id repeated 250,000 times cancels it without holding others",
          arguments: ["cancel", "cancelPrefix"])
    func cancellingRepeatedInput(method: String) throws {
        try E2EDaemon.with { daemon in
            let connection = try E2ERawConnection(path: daemon.socketPath)
            try connection.call("create", ["id": "a"])
            let ids = JSONValue.array(Array(repeating: "a", count: 250_000))
            try connection.call("all", ["ids": ids, "id": "many"])

            let pinger = try E2EPinger(socketPath: daemon.socketPath)
            let clock = ContinuousClock()
            let start = clock.now
            if method == "cancel" {
                #expect(try connection.call("cancel", ["id": "many"])["state"] == "cancelled")
            } else {
                #expect(try connection.call("cancelPrefix", ["prefix": "many"])["cancelled"] == 1)
            }
            let took = clock.now - start
            let figures = try pinger.stop()
            print("\(method) of an all over 250,000 repeats: \(took); pinger: \(figures)")
            // Cancelled in the turn of the answer: upward cancellation is not
            // re-derived at a restart, so it is stored with the answer.
            #expect(try connection.call("get", ["id": "a"])["state"] == "cancelled")
            #expect(try connection.call("get", ["id": "many"])["state"] == "cancelled")
            #expect(figures.worst < Self.pingBound, "\(figures)")
        }
    }

    @Test("cancel or resolve of a parent with 100,000 then children settles them all without holding others",
          arguments: ["cancel", "resolve"])
    func settlingParentOfManyChildren(method: String) throws {
        try E2EDaemon.with { daemon in
            let connection = try E2ERawConnection(path: daemon.socketPath)
            try Self.makeParent(ofChildren: 100_000, on: connection)

            let pinger = try E2EPinger(socketPath: daemon.socketPath)
            let clock = ContinuousClock()
            let start = clock.now
            let params: JSONValue = method == "cancel" ? ["id": "parent"] : ["id": "parent", "value": 7]
            let expected: JSONValue = method == "cancel" ? "cancelled" : "fulfilled"
            #expect(try connection.call(method, params)["state"] == expected)
            // The children settle over later turns; the last one registered settles last.
            #expect(try E2E.eventually { try connection.call("get", ["id": "kid/99999"])["state"] == expected })
            let took = clock.now - start
            let figures = try pinger.stop()
            print("\(method) of a parent of 100,000 children: \(took); pinger: \(figures)")
            let pending = try connection.call("list", ["prefix": "kid/", "state": "pending", "limit": 10])
            #expect(pending["promises"]?.arrayValue?.isEmpty == true, "\(pending)")
            if method == "resolve" {
                #expect(try connection.call("get", ["id": "kid/0"])["value"] == 7)
            }
            #expect(figures.worst < Self.fanOutPingBound, "\(figures)")
        }
    }

    @Test("one batch line of 1,000 list calls over 20,000 promises makes no more records than its answer holds")
    func batchOfListsOverManyPromises() throws {
        // A bound of 8 MB rather than 64: the work it allows is what a debug build on a loaded machine does in seconds.
        try E2EDaemon.with(extraArguments: ["--max-batch-answer-bytes", "8000000"]) { daemon in
            let connection = try E2ERawConnection(path: daemon.socketPath)
            for start in stride(from: 0, to: 20_000, by: 1_000) {
                try connection.batch((start..<(start + 1_000)).map { ("create", ["id": .string("p/\($0)")]) })
            }
            let pinger = try E2EPinger(socketPath: daemon.socketPath)
            let clock = ContinuousClock()
            let start = clock.now
            let answers = try connection.batchAnswers(Array(repeating: ("list", ["limit": 10_000]), count: 1_000))
            #expect(answers.map { $0["id"] } == (0..<1_000).map { .int($0) })
            let took = clock.now - start
            let figures = try pinger.stop()
            print("a batch of 1,000 lists over 20,000 promises: \(took); pinger: \(figures)")
            #expect(answers.count == 1_000)
            let pages = answers.compactMap { $0["result"]?["promises"]?.arrayValue }
            #expect(pages.first?.first?["id"] == "p/0")
            // 8 MB hold a few pages of 10,000 records (pages end, too, where a slice of the
            // loop turn does); the members past them are left out, each having made a record
            // at most: a batch makes what its answer holds, not 1,000 pages.
            let records = pages.map(\.count).reduce(0, +)
            #expect(records < 60_000, "\(records) records in \(pages.count) pages")
            // A page cut short names where the next one starts.
            let first = try #require(answers.first?["result"])
            if let cursor = first["cursor"], !cursor.isNull {
                let next = try connection.call("list", ["limit": 1, "cursor": cursor])
                #expect(next["promises"]?.arrayValue?.first?["id"] == .string("p/\(pages[0].count)"))
            }
            #expect(answers.allSatisfy { $0["result"] != nil || $0["error"]?["data"]?["limit"] == "maxBatchAnswerBytes" })
            #expect(figures.worst < Self.batchPingBound, "\(figures)")
        }
    }

    @Test("cancelPrefix over 100,000 then children of one parent cancels them all without holding others")
    func cancelPrefixOverManyChildren() throws {
        try E2EDaemon.with { daemon in
            let connection = try E2ERawConnection(path: daemon.socketPath)
            try Self.makeParent(ofChildren: 100_000, on: connection)

            let pinger = try E2EPinger(socketPath: daemon.socketPath)
            let clock = ContinuousClock()
            let start = clock.now
            var cancelled = 0
            var calls = 0
            var cursor: JSONValue = .null
            repeat {
                let params: JSONValue = cursor.isNull ? ["prefix": "kid/"] : ["prefix": "kid/", "cursor": cursor]
                let answer = try connection.call("cancelPrefix", params)
                cancelled += answer["cancelled"]?.intValue ?? 0
                cursor = answer["cursor"] ?? .null
                calls += 1
            } while !cursor.isNull
            let took = clock.now - start
            let figures = try pinger.stop()
            print("cancelPrefix over 100,000 children: \(calls) calls in \(took); pinger: \(figures)")
            #expect(cancelled == 100_000)
            #expect(try connection.call("get", ["id": "kid/99999"])["state"] == "cancelled")
            // Its last child cancelled, the parent is cancelled too.
            #expect(try connection.call("get", ["id": "parent"])["state"] == "cancelled")
            #expect(figures.worst < Self.pingBound, "\(figures)")
        }
    }
}
