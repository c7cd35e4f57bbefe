import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// Every method over a real connection, with the exact records it answers.
@Suite("protocol methods against the real daemon")
struct ProtocolMethodTests {
    @Test("create makes a pending record with the given id, name and no parent")
    func createWithID() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let record = try E2E.record(client.call("create", ["id": "build/lib", "name": "library"]))
            #expect(record.id == "build/lib")
            #expect(record.state == .pending)
            #expect(record.parent == nil)
            #expect(record.json["parent"] == .null)
            #expect(record.json["name"] == "library")
        }
    }

    @Test("create without id gets a fresh id from the daemon each time")
    func createWithoutID() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let first = try E2E.record(client.call("create"))
            let second = try E2E.record(client.call("create"))
            #expect(!first.id.isEmpty)
            #expect(first.id != second.id)
        }
    }

    @Test("create of a taken id answers -32006, and with ifExists get returns the existing record")
    func createExisting() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "x"])
            try client.call("resolve", ["id": "x", "value": 7])
            let error = #expect(throws: RPCError.self) { try client.call("create", ["id": "x"]) }
            #expect(error?.code == .alreadyExists)
            let existing = try E2E.record(client.call("create", ["id": "x", "ifExists": "get"]))
            #expect(existing.state == .fulfilled)
            #expect(existing.value == 7)
        }
    }

    @Test("resolve fulfils with any JSON value and answers the fulfilled record")
    func resolve() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let value: JSONValue = ["n": 1, "list": [true, nil, 2.5, "s"], "nested": ["k": "v"]]
            try client.call("create", ["id": "a"])
            let record = try E2E.record(client.call("resolve", ["id": "a", "value": value]))
            #expect(record.state == .fulfilled)
            #expect(record.value == value)
            #expect(try E2E.record(client.call("get", ["id": "a"])).value == value)
        }
    }

    @Test("resolve without value fulfils with null (docs/PROTOCOL.md: absent means null)")
    func resolveWithoutValue() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "a"])
            let record = try E2E.record(client.call("resolve", ["id": "a"]))
            #expect(record.state == .fulfilled)
            #expect(record.value == .null)
        }
    }

    @Test("reject takes a reason object or a string as its message")
    func reject() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "a"])
            try client.call("create", ["id": "b"])
            let a = try E2E.record(
                client.call("reject", ["id": "a", "reason": ["code": 9, "message": "broke", "data": ["at": 3]]]))
            #expect(a.state == .rejected)
            #expect(a.reasonCode == 9)
            #expect(a.reasonMessage == "broke")
            #expect(a.reason?["data"] == ["at": 3])
            let b = try E2E.record(client.call("reject", ["id": "b", "reason": "plain text"]))
            #expect(b.state == .rejected)
            #expect(b.reasonMessage == "plain text")
        }
    }

    @Test("settling twice answers -32002 and leaves the first outcome")
    func settleTwice() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "a"])
            try client.call("resolve", ["id": "a", "value": 1])
            for (method, params) in [
                ("resolve", ["id": "a", "value": 2]), ("reject", ["id": "a", "reason": "no"]),
            ] as [(String, [String: JSONValue])] {
                let error = #expect(throws: RPCError.self) { try client.call(method, params) }
                #expect(error?.code == .alreadySettled)
            }
            #expect(try E2E.record(client.call("get", ["id": "a"])).value == 1)
        }
    }

    @Test("methods on an unknown id answer -32001")
    func unknownID() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let calls: [(String, [String: JSONValue])] = [
                ("get", ["id": "nope"]), ("resolve", ["id": "nope", "value": 1]),
                ("reject", ["id": "nope", "reason": "x"]), ("cancel", ["id": "nope"]),
                ("progress", ["id": "nope", "progress": 0.5]), ("then", ["id": "nope"]),
            ]
            for (method, params) in calls {
                let error = #expect(throws: RPCError.self, "\(method)") { try client.call(method, params) }
                #expect(error?.code == .noSuchPromise, "\(method)")
            }
        }
    }

    @Test("cancel answers the cancelled record")
    func cancel() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "a"])
            let record = try E2E.record(client.call("cancel", ["id": "a"]))
            #expect(record.id == "a")
            #expect(record.state == .cancelled)
            #expect(record.reasonMessage != nil)
        }
    }

    @Test("list filters by state and prefix, and pages with limit and cursor")
    func list() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            for i in 0..<5 { try client.call("create", ["id": .string("job/\(i)")]) }
            try client.call("create", ["id": "other"])
            try client.call("resolve", ["id": "job/1", "value": 1])

            let pending = try client.call("list", ["state": "pending", "prefix": "job/"])
            let pendingIDs = Set((pending["promises"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue })
            #expect(pendingIDs == ["job/0", "job/2", "job/3", "job/4"])

            var seen: [String] = []
            var cursor: JSONValue = .null
            var pages = 0
            repeat {
                var params: [String: JSONValue] = ["prefix": "job/", "limit": 2]
                if !cursor.isNull { params["cursor"] = cursor }
                let page = try client.call("list", params)
                let ids = (page["promises"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
                #expect(ids.count <= 2)
                seen += ids
                cursor = page["cursor"] ?? .null
                pages += 1
            } while !cursor.isNull && pages < 10
            #expect(seen.sorted() == (0..<5).map { "job/\($0)" })
            #expect(pages >= 3)
        }
    }

    @Test("wait answers once the promise settles")
    func waitThenResolve() throws {
        try E2EDaemon.with { daemon in
            let waiter = try daemon.client()
            let other = try daemon.client()
            try other.call("create", ["id": "a"])
            let request = try waiter.send("wait", ["id": "a"])
            Thread.sleep(forTimeInterval: 0.05)
            try other.call("resolve", ["id": "a", "value": "done"])
            #expect(try E2E.record(waiter.result(for: request)).value == "done")
        }
    }

    @Test("a wait that comes before create is answered once the promise is created and settled")
    func waitBeforeCreate() throws {
        try E2EDaemon.with { daemon in
            let waiter = try daemon.client()
            let other = try daemon.client()
            let request = try waiter.send("wait", ["id": "later"])
            Thread.sleep(forTimeInterval: 0.05)
            try other.call("create", ["id": "later"])
            try other.call("resolve", ["id": "later", "value": 42])
            let record = try E2E.record(waiter.result(for: request))
            #expect(record.id == "later")
            #expect(record.value == 42)
        }
    }

    @Test("wait with timeoutMs on a pending promise answers -32005 after about that long")
    func waitTimesOut() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "a"])
            let start = ContinuousClock.now
            let error = #expect(throws: RPCError.self) { try client.call("wait", ["id": "a", "timeoutMs": 150]) }
            #expect(error?.code == .waitTimedOut)
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .milliseconds(140))
            #expect(elapsed < .seconds(3))
            #expect(try E2E.record(client.call("get", ["id": "a"])).state == .pending)
        }
    }

    @Test("create with timeoutMs rejects the promise when it is still pending then")
    func createTimeout() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "a", "timeoutMs": 100])
            let record = try E2E.record(client.call("wait", ["id": "a", "timeoutMs": 5000]))
            #expect(record.state == .rejected)
        }
    }

    @Test("a leased promise is rejected when its connection closes while pending")
    func leaseRejectsOnClose() throws {
        try E2EDaemon.with { daemon in
            let holder = try daemon.client()
            let observer = try daemon.client()
            try holder.call("create", ["id": "leased", "lease": true])
            try holder.call("create", ["id": "kept"])
            let request = try observer.send("wait", ["id": "leased"])
            holder.close()
            let record = try E2E.record(observer.result(for: request))
            #expect(record.state == .rejected)
            #expect(try E2E.record(observer.call("get", ["id": "kept"])).state == .pending)
        }
    }

    @Test("a leased promise settled before its connection closes keeps its value")
    func leaseSettledSurvives() throws {
        try E2EDaemon.with { daemon in
            let holder = try daemon.client()
            try holder.call("create", ["id": "leased", "lease": true])
            try holder.call("resolve", ["id": "leased", "value": 1])
            holder.close()
            let observer = try daemon.client()
            Thread.sleep(forTimeInterval: 0.05)
            let record = try E2E.record(observer.call("get", ["id": "leased"]))
            #expect(record.state == .fulfilled)
            #expect(record.value == 1)
        }
    }

    @Test("progress answers the record and reaches subscribers")
    func progress() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let watcher = try daemon.client()
            try client.call("create", ["id": "a"])
            #expect(try watcher.call("subscribe", ["ids": ["a"]]) == ["subscribed": 1])
            let record = try E2E.record(client.call("progress", ["id": "a", "progress": 0.25, "message": "quarter"]))
            #expect(record.state == .pending)
            let notification = try #require(try watcher.nextNotification(timeout: .seconds(5)))
            #expect(notification.method == "progress")
            #expect(notification.params["id"] == "a")
            #expect(notification.params["progress"]?.doubleValue == 0.25)
            #expect(notification.params["message"] == "quarter")
        }
    }

    @Test("progress outside 0…1 answers -32602")
    func progressOutOfRange() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "a"])
            let error = #expect(throws: RPCError.self) { try client.call("progress", ["id": "a", "progress": 1.5]) }
            #expect(error?.code == .invalidParams)
        }
    }
}
