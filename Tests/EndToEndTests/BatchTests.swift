import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

@Suite("JSON-RPC batches and pipelining")
struct BatchTests {
    @Test("a batch gets one array answer with an entry per request, errors included, none for notifications")
    func mixedBatch() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let results = try client.batch([
                .init("create", ["id": "a"]),
                .init("create", ["id": "a"]),
                .init("create", ["id": "n"], isNotification: true),
                .init("resolve", ["id": "a", "value": 3]),
                .init("nonsense"),
            ])
            #expect(results.count == 4)
            #expect(try E2E.record(results[0].get()).state == .pending)
            #expect(throws: RPCError.self) { try results[1].get() }
            if case .failure(let error) = results[1] { #expect(error.code == .alreadyExists) }
            #expect(try E2E.record(results[2].get()).value == 3)
            if case .failure(let error) = results[3] { #expect(error.code == .methodNotFound) } else { Issue.record("nonsense succeeded") }
            #expect(try E2E.record(client.call("get", ["id": "n"])).state == .pending)
        }
    }

    @Test("the answer to a batch is one line holding a JSON array")
    func batchAnswerIsAnArray() throws {
        try E2EDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            raw.writeLine(#"[{"jsonrpc":"2.0","id":1,"method":"info","params":{}},{"jsonrpc":"2.0","id":2,"method":"get","params":{"id":"x"}},5]"#)
            let answer = try #require(try raw.readMessage()?.arrayValue)
            #expect(answer.count == 3)
            let byID = Dictionary(answer.compactMap { item in item["id"].map { ($0, item) } }, uniquingKeysWith: { a, _ in a })
            #expect(byID[1]?["result"]?["protocol"] == 1)
            #expect(byID[2]?["error"]?["code"] == -32001)
            #expect(answer.contains { $0["error"]?["code"] == -32600 })
        }
    }

    @Test("a batch answer of more than a megabyte arrives whole and in order, with or without a store",
          arguments: [false, true])
    func largeBatchAnswer(durable: Bool) throws {
        let value = JSONValue.string(String(repeating: "v", count: 8_000))
        let check = { (socketPath: String) throws in
            let connection = try E2ERawConnection(path: socketPath)
            try connection.batch((0..<200).map { ("create", ["id": .string("big/\($0)")]) })
            for half in [0..<100, 100..<200] {   // a request line holds at most 1 MiB
                try connection.batch(half.map { ("resolve", ["id": .string("big/\($0)"), "value": value]) })
            }
            // 1.6 MB of answer in one line, then a small answer after it on the same connection.
            let answers = try connection.batchAnswers((0..<200).map { ("get", ["id": .string("big/\($0)")]) })
            #expect(answers.count == 200)
            #expect(answers.enumerated().allSatisfy { index, answer in
                answer["id"] == .int(index) && answer["result"]?["id"] == .string("big/\(index)")
                    && answer["result"]?["value"] == value
            })
            #expect(try connection.call("get", ["id": "big/7"])["state"] == "fulfilled")
        }
        if durable {
            try E2EDurableDaemon.with { try check($0.socketPath) }
        } else {
            try E2EDaemon.with { try check($0.socketPath) }
        }
    }

    @Test("a batch of only notifications gets no answer")
    func notificationOnlyBatch() throws {
        try E2EDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            raw.writeLine(#"[{"jsonrpc":"2.0","method":"create","params":{"id":"q1"}},{"jsonrpc":"2.0","method":"create","params":{"id":"q2"}}]"#)
            raw.writeLine(#"{"jsonrpc":"2.0","id":"after","method":"list","params":{"prefix":"q"}}"#)
            let answer = try raw.readMessage()
            #expect(answer?["id"] == "after")
            #expect(answer?["result"]?["promises"]?.arrayValue?.count == 2)
        }
    }

    @Test("a batch over maxBatchSize answers -32004")
    func oversizedBatch() throws {
        try E2EDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            let one = #"{"jsonrpc":"2.0","id":1,"method":"info","params":{}}"#
            raw.writeLine("[" + Array(repeating: one, count: DaemonLimits().maxBatchSize + 1).joined(separator: ",") + "]")
            let answer = try #require(try raw.readMessage())
            let error = answer["error"] ?? answer.arrayValue?.first?["error"]
            #expect(error?["code"] == -32004)
        }
    }

    @Test("500 pipelined requests are all answered and matched by id")
    func pipelining() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let creates = try (0..<500).map { try client.send("create", ["id": .string("p/\($0)")]) }
            let records = try creates.map { try E2E.record(client.result(for: $0)) }
            #expect(records.map(\.id) == (0..<500).map { "p/\($0)" })
        }
    }

    @Test("a pending wait does not hold up later requests on the same connection")
    func outOfOrderAnswers() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "slow"])
            let wait = try client.send("wait", ["id": "slow"])
            let info = try client.send("info")
            #expect(try client.result(for: info)["protocol"] == 1)
            try client.call("resolve", ["id": "slow", "value": 1])
            #expect(try E2E.record(client.result(for: wait)).value == 1)
        }
    }
}
