import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// A long batch runs a slice a loop turn (others are served meanwhile:
/// LongRequestStallTests), and its own connection still gets its answers
/// whole and in the order it sent its lines.
@Suite("batches yield the loop to other clients", .serialized)
struct BatchTurnSliceTests {
    @Test("lines sent after a sliced batch are answered after it, and see what it did")
    func linesAfterABatchWaitForIt() throws {
        try E2EDaemon.with { daemon in
            let connection = try E2ERawConnection(path: daemon.socketPath)
            for start in stride(from: 0, to: 20_000, by: 1_000) {
                try connection.batch((start..<(start + 1_000)).map { ("create", ["id": .string("p/\($0)")]) })
            }
            // 300 page reads, then a create: the batch spans many turns.
            var members: [JSONValue] = (0..<300).map { index in
                ["jsonrpc": "2.0", "id": .int(index), "method": "list", "params": ["limit": 10_000, "state": "fulfilled"]]
            }
            members.append(["jsonrpc": "2.0", "id": 300, "method": "create", "params": ["id": "last"]])
            let get: JSONValue = ["jsonrpc": "2.0", "id": "after", "method": "get", "params": ["id": "last"]]
            // One write: the get is read with the batch, and must wait for it.
            #expect(connection.write(JSONValue.array(members).serialized() + [0x0A] + get.serialized() + [0x0A]))
            let first = try #require(try connection.readMessage(timeout: .seconds(120)))
            let answers = try #require(first.arrayValue, "the batch is answered first: \(first)")
            #expect(answers.count == 301)
            #expect(answers.last?["result"]?["state"] == "pending")
            let second = try #require(try connection.readMessage(timeout: .seconds(120)))
            #expect(second["id"] == "after")
            #expect(second["result"]?["id"] == "last")
        }
    }
}
