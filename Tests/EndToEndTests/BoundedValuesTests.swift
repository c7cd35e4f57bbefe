import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// Issue 22, item 1, against a real durable daemon: what combinators make
/// stays within the limits, so a restart reads every stored row and the
/// store accepts every change.
@Suite("bounded values: a real daemon and its store")
struct BoundedValuesTests {
    @Test("a chain of 200 any over a rejected x0 is stored within 128 levels: the daemon restarts and x199 names x0")
    func anyChainSurvivesRestart() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "x0"])
            for link in 1..<200 {
                try client.call("any", ["ids": [.string("x\(link - 1)")], "id": .string("x\(link)")])
            }
            try client.call("reject", ["id": "x0", "reason": "disk full"])
            client.close()

            try daemon.restart()
            let reason = try #require(try daemon.record("x199")?.json["reason"])
            #expect(reason.depth <= 128)
            #expect(reason.serializedByteCount() <= 65_536)
            var innermost: JSONValue? = reason
            var origin: JSONValue = .null
            while let first = innermost?["data"]?["errors"]?.arrayValue?.first {
                origin = first["id"] ?? .null
                innermost = first["reason"]
            }
            #expect(origin == "x0")
            #expect(innermost?["message"] == "disk full")
            #expect(try daemon.call("create", ["id": "after"])["state"] == "pending")
        }
    }

    @Test("all over a 200 KB value 6,000 times is a -32004 rejection, and the store takes the next change")
    func allOfManyCopiesLeavesTheStoreWritable() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            defer { client.close() }
            try client.call("create", ["id": "a"])
            try client.call("resolve", ["id": "a", "value": .string(String(repeating: "v", count: 200_000))])
            let record = try client.call("all", ["ids": .array(Array(repeating: "a", count: 6_000)), "id": "x"])
            #expect(record["reason"]?["code"] == -32004)
            #expect(record["reason"]?["data"] == ["limit": "maxValueBytes", "value": .int(16 << 20)])
            #expect(try client.call("create", ["id": "after"])["state"] == "pending")
            #expect(try client.call("info")["store"]?["writable"] == true)
        }
    }

    @Test("--max-value-bytes and --max-reason-bytes set the limits info reports")
    func flagsSetLimits() throws {
        try E2EDurableDaemon.with(extraArguments: ["--max-value-bytes", "100", "--max-reason-bytes", "300"]) { daemon in
            let limits = try daemon.call("info")["limits"]
            #expect(limits?["maxValueBytes"] == 100)
            #expect(limits?["maxReasonBytes"] == 300)
            try daemon.call("create", ["id": "a"])
            try daemon.call("resolve", ["id": "a", "value": .string(String(repeating: "v", count: 60))])
            #expect(try daemon.call("all", ["ids": ["a", "a"]])["reason"]?["data"]?["limit"] == "maxValueBytes")
        }
    }
}
