import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

@Suite("subscribe, unsubscribe and settled notifications")
struct SubscriptionTests {
    @Test("a subscriber gets one settled notification with the record when the promise settles")
    func settledNotification() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let watcher = try daemon.client()
            try client.call("create", ["id": "a"])
            #expect(try watcher.call("subscribe", ["ids": ["a"]]) == ["subscribed": 1])
            try client.call("resolve", ["id": "a", "value": ["ok": true]])
            let notification = try #require(try watcher.nextNotification(timeout: .seconds(5)))
            #expect(notification.method == "settled")
            let record = try E2E.record(notification.params)
            #expect(record.id == "a")
            #expect(record.state == .fulfilled)
            #expect(record.value == ["ok": true])
            #expect(try watcher.nextNotification(timeout: .milliseconds(100)) == nil)
        }
    }

    @Test("subscribing to an already settled promise notifies at once: never lost")
    func subscribeAfterSettle() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "done"])
            try client.call("reject", ["id": "done", "reason": ["message": "late", "code": 4]])
            try client.call("subscribe", ["ids": ["done"]])
            let notification = try #require(try client.nextNotification(timeout: .seconds(5)))
            let record = try E2E.record(notification.params)
            #expect(notification.method == "settled")
            #expect(record.state == .rejected)
            #expect(record.reasonCode == 4)
        }
    }

    @Test("one settled notification per id, for several ids")
    func severalIDs() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            for id in ["a", "b", "c"] { try client.call("create", ["id": .string(id)]) }
            #expect(try client.call("subscribe", ["ids": ["a", "b", "c"]]) == ["subscribed": 3])
            try client.call("resolve", ["id": "b", "value": 2])
            try client.call("cancel", ["id": "c"])
            try client.call("resolve", ["id": "a", "value": 1])
            var states: [String: String] = [:]
            for _ in 0..<3 {
                let notification = try #require(try client.nextNotification(timeout: .seconds(5)))
                states[notification.params["id"]?.stringValue ?? "?"] = notification.params["state"]?.stringValue
            }
            #expect(states == ["a": "fulfilled", "b": "fulfilled", "c": "cancelled"])
        }
    }

    @Test("after unsubscribe no notification comes")
    func unsubscribe() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let watcher = try daemon.client()
            try client.call("create", ["id": "a"])
            try watcher.call("subscribe", ["ids": ["a"]])
            #expect(try watcher.call("unsubscribe", ["ids": ["a"]]) == ["unsubscribed": 1])
            try client.call("resolve", ["id": "a", "value": 1])
            #expect(try watcher.nextNotification(timeout: .milliseconds(200)) == nil)
        }
    }

    @Test("a subscription before create is honoured once the promise is created and settled")
    func subscribeBeforeCreate() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let watcher = try daemon.client()
            #expect(try watcher.call("subscribe", ["ids": ["future"]]) == ["subscribed": 1])
            try client.call("create", ["id": "future"])
            try client.call("resolve", ["id": "future", "value": 5])
            let notification = try #require(try watcher.nextNotification(timeout: .seconds(5)))
            #expect(notification.params["value"] == 5)
        }
    }

    @Test("notifications pushed while answers are pending do not disturb id matching")
    func notificationsInterleaveWithAnswers() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "a"])
            try client.call("subscribe", ["ids": ["a"]])
            let resolve = try client.send("resolve", ["id": "a", "value": 1])
            let get = try client.send("get", ["id": "a"])
            #expect(try E2E.record(client.result(for: get)).state == .fulfilled)
            #expect(try E2E.record(client.result(for: resolve)).value == 1)
            #expect(try client.nextNotification(timeout: .seconds(5))?.method == "settled")
        }
    }
}
