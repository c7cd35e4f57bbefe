import Promise
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
import PromiseTestSupport
import Testing
import PromiseStore

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

    @Test("a plain record (made with create, no details, no children) is written byte for byte as the member list writes it, in every state")
    func plainRecordShapes() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "pending"], from: peer)
        harness.call("create", ["id": "fulfilled"], from: peer)
        harness.call("resolve", ["id": "fulfilled", "value": 1], from: peer)
        harness.call("create", ["id": "object"], from: peer)
        harness.call("resolve", ["id": "object", "value": ["k": [1, "two"], "a": nil]], from: peer)
        harness.call("create", ["id": "rejected"], from: peer)
        harness.call("reject", ["id": "rejected", "reason": ["message": "broke", "code": 7]], from: peer)
        harness.call("create", ["id": "cancelled"], from: peer)
        harness.call("cancel", ["id": "cancelled"], from: peer)
        harness.call("create", ["id": "needs \"escape\"\\"], from: peer)
        var entries = harness.registry.entries.values.sorted { $0.id < $1.id }
        // Shapes no request makes: a parent without a `then`, a partial
        // progress, a settlement not yet stamped. Those with a core promise
        // keep it in their details, so the member list writes them; the one
        // settled without a core and not yet stamped is plain.
        let partial = Promise<JSONValue>()
        partial.reportProgress(0.25)
        let settledPartial = Promise<JSONValue>()
        settledPartial.reportProgress(0.5)
        _ = settledPartial.reject(PromiseError.timedOut)
        let progressed = Promise<JSONValue>()
        progressed.reportProgress(0.5)
        _ = progressed.fulfill(2)
        let cancelled = Promise<JSONValue>()
        cancelled.cancel()
        let unstamped = Promise<JSONValue>()
        _ = unstamped.fulfill("late")
        let unstampedPlain = RemotePromise(id: "unstamped plain", promise: nil, kind: .created, sequence: 106,
                                           parentID: nil, inputIDs: nil, name: nil, created: 13)
        #expect(unstampedPlain.settleWithoutCore(.success("late")))
        entries += [
            RemotePromise(id: "with parent", promise: Promise(), kind: .created, sequence: 100, parentID: "p\"",
                          inputIDs: nil, name: nil, created: 1_795_619_706_963),
            RemotePromise(id: "partial", promise: partial, kind: .created, sequence: 101, parentID: nil,
                          inputIDs: nil, name: nil, created: -5),
            RemotePromise(id: "settled partial", promise: settledPartial, kind: .created, sequence: 102,
                          parentID: "q", inputIDs: nil, name: nil, created: 0),
            RemotePromise(id: "fulfilled after progress", promise: progressed, kind: .created, sequence: 105,
                          parentID: nil, inputIDs: nil, name: nil, created: 7),
            RemotePromise(id: "cancelled here", promise: cancelled, kind: .created, sequence: 104, parentID: nil,
                          inputIDs: nil, name: nil, created: 99),
            RemotePromise(id: "unstamped", promise: unstamped, kind: .created, sequence: 103, parentID: nil,
                          inputIDs: nil, name: nil, created: 12),
            unstampedPlain,
        ]
        #expect(entries.count == 13)
        let plain: Set = ["pending", "fulfilled", "object", "needs \"escape\"\\", "unstamped plain"]
        for entry in entries {
            // Rejected and cancelled by a request, a promise keeps its final
            // progress (0) in its details, one with a parent keeps its
            // parent's id there, and one with a core promise that promise:
            // only the others are plain.
            let isPlain = entry.details == nil && entry.kind == .created
            #expect(isPlain == plain.contains(entry.id), "\(entry.id) is plain or not")
            let written = JSONTextBuffer.bytes { entry.writeRecord(now: 1_700_000_000_000, maxChildren: 1, to: &$0) }
            let value = entry.record(now: 1_700_000_000_000, maxChildren: 1).serialized()
            #expect(String(decoding: written, as: UTF8.self) == String(decoding: value, as: UTF8.self),
                    "record of \(entry.id)")
            // A value's text given from the cache is written as it stands.
            if case .success(let result)? = entry.result {
                let cached = JSONTextBuffer.bytes {
                    entry.writeRecord(now: 1_700_000_000_000, maxChildren: 1, valueText: result.serialized(), to: &$0)
                }
                #expect(cached == value, "record of \(entry.id), with its value's text")
            }
        }
    }

    @Test("the records of a create and a resolve are the text they have always been")
    func createResolveText() throws {
        let (harness, peer, entry) = try created("k1")
        let pending = JSONTextBuffer.bytes { entry.writeRecord(now: 0, maxChildren: 1, to: &$0) }
        #expect(String(decoding: pending, as: UTF8.self) == #"{"children":[],"created":\#(entry.created),"id":"k1","kind":"created","name":null,"parent":null,"progress":0.0,"settled":null,"state":"pending"}"#)
        harness.call("resolve", ["id": "k1", "value": 1], from: peer)
        let settled = try #require(entry.settled)
        let fulfilled = JSONTextBuffer.bytes { entry.writeRecord(now: 0, maxChildren: 1, to: &$0) }
        #expect(String(decoding: fulfilled, as: UTF8.self) == #"{"children":[],"created":\#(entry.created),"id":"k1","kind":"created","name":null,"parent":null,"progress":1.0,"settled":\#(settled),"state":"fulfilled","value":1}"#)
    }

    @Test("an answer carrying a record is the text of the JSON-RPC response holding the record value, whatever its id")
    func recordAnswerText() throws {
        let entry = try created("a").entry
        let ids: [JSONValue] = [1, 0, -3, 1_795_619_706_963, "text \"id\"", .null, 2.5]
        for id in ids {
            let line = OutgoingMessage.recordResult(id: id) {
                entry.writeRecord(now: 5, maxChildren: 1, to: &$0)
            }.serializedLine()
            let expected = JSONRPCResponse.result(id, entry.record(now: 5, maxChildren: 1)).serializedLine()
            #expect(String(decoding: line, as: UTF8.self) == String(decoding: expected, as: UTF8.self), "id \(id)")
        }
    }

    @Test("a batch's answer in parts is, joined, the text of its line")
    func batchParts() throws {
        let entry = try created("a").entry
        let record = OutgoingMessage.recordResult(id: 1) { entry.writeRecord(now: 5, maxChildren: 1, to: &$0) }
        let error = OutgoingMessage.json(JSONRPCResponse.error(2, RPCError(.noSuchPromise, "no promise \"b\"")))
        for answers in [[record, error, record], [error], []] {
            let batch = OutgoingMessage.batch(answers)
            let joined = Array(batch.serializedParts().joined())
            #expect(String(decoding: joined, as: UTF8.self) == String(decoding: batch.serializedLine(), as: UTF8.self))
        }
        #expect(Array(record.serializedParts().joined()) == record.serializedLine(), "a message not a batch is one part")
    }

    /// A harness, a client, and the promise `id` it made with `create`.
    private func created(_ id: String) throws -> (harness: RPCHarness, peer: RPCFakePeer, entry: RemotePromise) {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": .string(id)], from: peer)
        return (harness, peer, try #require(harness.registry.entries[id]))
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
