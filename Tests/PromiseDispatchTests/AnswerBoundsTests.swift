import Foundation
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
import Testing

/// What one answer may hold: a batch's whole answer (`maxBatchAnswerBytes`)
/// and the ids a record lists as its children (`maxRecordChildren`).
@Suite("Answer bounds")
struct AnswerBoundsTests {
    @Test("a batch of gets whose answers would pass maxBatchAnswerBytes: the first ones answered, the rest -32004, the line within the bound")
    func batchAnswerIsBounded() throws {
        var limits = DaemonLimits()
        limits.maxBatchAnswerBytes = 100_000
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "big"], from: peer)
        harness.call("resolve", ["id": "big", "value": .string(String(repeating: "x", count: 30_000))], from: peer)

        harness.sendBatch(Array(repeating: ("get", ["id": "big"]), count: 1_000), from: peer)
        let line = try #require(peer.sent.last)
        let answers = try #require(try JSONValue(parsing: line).arrayValue)
        #expect(answers.count == 1_000)
        #expect(answers.prefix(3).allSatisfy { $0["result"]?["value"]?.stringValue?.count == 30_000 })
        // The bound holds the answers given; each one left out adds its short error.
        let leftOut = answers.dropFirst(3).map { $0.serialized().count + 1 }.reduce(0, +)
        #expect(line.count - 1 - leftOut <= 100_000)
        #expect(leftOut < 997 * 200)
        for (index, answer) in answers.enumerated().dropFirst(3) {
            #expect(answer["id"] == .int(index + 1))
            #expect(answer["error"]?["code"] == -32004)
            #expect(answer["error"]?["data"]?["limit"] == "maxBatchAnswerBytes")
        }
    }

    @Test("list pages in a batch are cut to the room left in its answer and end with a cursor, so a batch of lists makes no more records than its answer holds")
    func listPagesFitTheBatchAnswer() throws {
        var limits = DaemonLimits()
        limits.maxBatchAnswerBytes = 100_000
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        for start in stride(from: 0, to: 2_000, by: 500) {
            harness.sendBatch((start..<(start + 500)).map { ("create", ["id": .string("p\($0)")]) }, from: peer)
        }
        // A whole page of 1,000 records takes more than the batch's 100,000 bytes.
        let answers = try harness.batchAnswers(Array(repeating: ("list", ["limit": 1_000]), count: 1_000), from: peer)
        #expect(answers.count == 1_000)
        let first = try #require(answers.first?["result"])
        let records = try #require(first["promises"]?.arrayValue)
        #expect(records.count > 100 && records.count < 1_000, "\(records.count) records")
        #expect(first["cursor"]?.stringValue != nil)
        // The next page, asked for with that cursor, starts where this one ended.
        let next = harness.call("list", ["limit": 1, "cursor": first["cursor"] ?? .null], from: peer)
        #expect(next["promises"]?.arrayValue?.first?["id"] == .string("p\(records.count)"))
        // What the others could still hold: a record or none each, most of them left out.
        let listed = answers.dropFirst().compactMap { $0["result"]?["promises"]?.arrayValue?.count }.reduce(0, +)
        #expect(listed <= 10)
        #expect(answers.dropFirst().filter { $0["error"]?["data"]?["limit"] == "maxBatchAnswerBytes" }.count >= 990)
    }

    @Test("a change whose answer is left out of a full batch was still carried out")
    func changeLeftOutOfTheAnswerIsDone() throws {
        var limits = DaemonLimits()
        limits.maxBatchAnswerBytes = 20_000
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        let value = JSONValue.string(String(repeating: "y", count: 15_000))
        harness.sendBatch([
            ("create", ["id": "a"]), ("resolve", ["id": "a", "value": value]),
            ("create", ["id": "b"]), ("resolve", ["id": "b", "value": value]),
        ], from: peer)
        let last = try #require(peer.sent.last)
        let answers = try #require(try JSONValue(parsing: last).arrayValue)
        #expect(answers.map { $0["error"]?["code"] } == [nil, nil, nil, -32004])
        #expect(harness.record("b", from: peer)["value"] == value)
    }

    @Test("an answer to a single request is not bounded by maxBatchAnswerBytes")
    func singleAnswerIsNotCut() {
        var limits = DaemonLimits()
        limits.maxBatchAnswerBytes = 1_000
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "big"], from: peer)
        harness.call("resolve", ["id": "big", "value": .string(String(repeating: "x", count: 5_000))], from: peer)
        #expect(harness.record("big", from: peer)["value"]?.stringValue?.count == 5_000)
    }

    @Test("a record lists its first maxRecordChildren children and counts the rest; list with parent pages through all of them")
    func recordChildrenAreBounded() throws {
        var limits = DaemonLimits()
        limits.maxRecordChildren = 2
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "root"], from: peer)
        for index in 1...5 {
            harness.call("then", ["id": "root", "childId": .string("c\(index)")], from: peer)
        }
        harness.call("create", ["id": "other"], from: peer)
        let record = harness.record("root", from: peer)
        #expect(record["children"] == ["c1", "c2"])
        #expect(record["childrenOmitted"] == 3)
        #expect(harness.record("c1", from: peer)["childrenOmitted"] == nil)

        var listed: [String] = []
        var cursor: JSONValue = .null
        var pages = 0
        repeat {
            var params: [String: JSONValue] = ["parent": "root", "limit": 2]
            if cursor != .null { params["cursor"] = cursor }
            let page = harness.call("list", .object(params), from: peer)
            listed += page["promises"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            cursor = page["cursor"] ?? .null
            pages += 1
        } while cursor != .null && pages < 10
        #expect(listed == ["c1", "c2", "c3", "c4", "c5"])
        #expect(pages == 3)

        let pending = harness.call("list", ["parent": "root", "prefix": "c4"], from: peer)
        #expect(pending["promises"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["c4"])
        #expect(harness.errorCode("list", ["parent": "nobody"], from: peer) == -32001)
        #expect(harness.errorCode("list", ["parent": "root", "cursor": "x"], from: peer) == -32602)
    }

    @Test("a record lists its first maxRecordChildren consumers and counts the rest")
    func recordConsumersAreBounded() {
        var limits = DaemonLimits()
        limits.maxRecordChildren = 2
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", ["id": "input"], from: peer)
        for index in 1...3 {
            harness.call("all", ["ids": ["input"], "id": .string("all\(index)")], from: peer)
        }
        let record = harness.record("input", from: peer)
        #expect(record["consumers"] == ["all1", "all2"])
        #expect(record["consumersOmitted"] == 1)
    }
}
