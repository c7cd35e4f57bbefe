@testable import PromiseRPC
import Testing

/// `RemotePromise.writeRecord` writes records straight to bytes for the
/// answers and `settled` notifications; `record(now:maxChildren:)` builds them as values
/// for everything else (list, wait). Both must give the same text for every
/// kind of record.
@Suite("Records written as JSON text")
struct RecordJSONTests {
    @Test("the written record is byte for byte the serialized record value, for every kind of promise")
    func writtenRecordMatchesValue() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "plain"], from: peer)
        harness.call("create", ["id": "named", "name": "with \"quotes\"\n and é", "timeoutMs": 60000, "lease": true],
                     from: peer)
        harness.call("create", ["id": "parent"], from: peer)
        harness.call("then", ["id": "parent", "childId": "child", "on": "settled"], from: peer)
        harness.call("then", ["id": "parent", "childId": "job", "exec": ["make", "lib"]], from: peer)
        harness.call("progress", ["id": "parent", "progress": 0.25, "message": "a quarter"], from: peer)
        harness.call("create", ["id": "fulfilled"], from: peer)
        harness.call("resolve", ["id": "fulfilled", "value": ["n": 1, "list": [true, .null, 2.5], "s": "x"]], from: peer)
        harness.call("create", ["id": "rejected"], from: peer)
        harness.call("reject", ["id": "rejected", "reason": ["message": "broke", "code": 7, "data": ["k": "v"]]],
                     from: peer)
        harness.call("create", ["id": "cancelled"], from: peer)
        harness.call("cancel", ["id": "cancelled"], from: peer)
        harness.call("create", ["id": "late", "timeoutMs": 5], from: peer)
        harness.loop.advance(by: 10)
        harness.call("all", ["ids": ["fulfilled", "plain"], "id": "both"], from: peer)
        harness.call("any", ["ids": ["rejected", "cancelled"], "id": "none"], from: peer)

        let entries = harness.registry.entries.values.sorted { $0.id < $1.id }
        #expect(entries.count == 11)
        for entry in entries {
            let written = JSONTextBuffer.bytes { entry.writeRecord(now: 1_700_000_000_000, maxChildren: 1, to: &$0) }
            let value = entry.record(now: 1_700_000_000_000, maxChildren: 1).serialized()
            #expect(String(decoding: written, as: UTF8.self) == String(decoding: value, as: UTF8.self),
                    "record of \(entry.id)")
        }
        #expect(entries.first { $0.id == "late" }?.state == "rejected")
        #expect(entries.first { $0.id == "none" }?.state == "rejected")
    }

    @Test("a settled notification, when it settles or at once on subscribing, is byte for byte the notification of the record value")
    func settledNotificationText() throws {
        let harness = RPCHarness()
        let watcher = harness.connect()
        let peer = harness.connect()
        harness.call("create", ["id": "later", "name": "é \"q\""], from: peer)
        harness.call("create", ["id": "done"], from: peer)
        harness.call("reject", ["id": "done", "reason": ["message": "no", "code": 3]], from: peer)
        harness.call("subscribe", ["ids": ["later", "done"]], from: watcher)
        harness.call("resolve", ["id": "later", "value": ["k": [1, 2]]], from: peer)

        let notifications = watcher.sent.suffix(2).map { String(decoding: $0, as: UTF8.self) }
        let expected = try ["done", "later"].map { id in
            let entry = try #require(harness.registry.entries[id])
            let value = JSONRPCResponse.notification("settled", harness.registry.record(entry)).serialized()
            return String(decoding: value, as: UTF8.self)
        }
        #expect(notifications == expected)
    }

    @Test("an answer carrying a written record reads as the same record `get` shows")
    func answerCarriesRecord() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let created = harness.call("create", ["id": "a", "name": "n"], from: peer)
        #expect(created == harness.record("a", from: peer))
        #expect(created["name"] == "n")
        let resolved = harness.call("resolve", ["id": "a", "value": 42], from: peer)
        #expect(resolved["state"] == "fulfilled")
        #expect(resolved["value"] == 42)
        #expect(resolved == harness.record("a", from: peer))
    }

    @Test("a batch of record answers is one array, in request order")
    func batchOfRecords() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.send(#"[{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"x"}},"#
            + #"{"jsonrpc":"2.0","id":2,"method":"get","params":{"id":"missing"}},"#
            + #"{"jsonrpc":"2.0","id":3,"method":"resolve","params":{"id":"x","value":"done"}}]"#, from: peer)
        let answers = try #require(peer.takeMessages().last?.arrayValue)
        #expect(answers.map { $0["id"] } == [1, 2, 3])
        #expect(answers[0]["result"]?["state"] == "pending")
        #expect(answers[1]["error"]?["code"] == -32001)
        #expect(answers[2]["result"]?["value"] == "done")
    }
}
