import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseServer
import PromiseStore
import Testing

/// An exec step's `started` and `exitStatus` are stored with it: a restart
/// shows the same record, and `get` the same duration and exit.
@Suite("exec steps keep started and exitStatus across a restart")
struct StepTimesRestartTests {
    @Test("after a restart, a fulfilled and a rejected step keep their started, settled and exitStatus")
    func startedAndExitStatusSurviveRestart() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "src"])
            try client.call("then", ["id": "src", "childId": "ok", "exec": ["sh", "-c", "sleep 0.3; echo 1"]])
            try client.call("then", ["id": "src", "childId": "bad", "exec": ["sh", "-c", "exit 3"]])
            try client.call("resolve", ["id": "src", "value": 1])
            let before = try ["ok", "bad"].map { try client.call("wait", ["id": .string($0)]) }
            client.close()
            #expect(before[0]["exitStatus"] == .int(0))
            #expect(before[1]["exitStatus"] == .int(3))
            #expect(before.allSatisfy { $0["started"]?.intValue != nil })
            try daemon.restart()
            let after = try daemon.client()
            defer { after.close() }
            for (id, record) in zip(["ok", "bad"], before) {
                let restored = try after.call("get", ["id": .string(id)])
                #expect(restored["started"] == record["started"], "\(id)")
                #expect(restored["settled"] == record["settled"], "\(id)")
                #expect(restored["exitStatus"] == record["exitStatus"], "\(id)")
            }
        }
    }

    @Test("a stored document without started and exitStatus (an older store) loads, without them")
    func olderDocumentLoads() throws {
        let old: JSONValue = [
            "id": "s", "sequence": 1, "kind": "then", "parent": "src", "on": "fulfilled", "exec": ["true"],
            "execStarted": true, "created": 1_000, "settled": 2_000, "state": "fulfilled", "value": 1,
        ]
        let stored = try StoredPromise(json: old)
        #expect(stored.started == nil && stored.exitStatus == nil)
        var withTimes = stored
        withTimes.started = 1_500
        withTimes.exitStatus = 0
        #expect(try StoredPromise(json: withTimes.json).started == 1_500)
        #expect(try StoredPromise(json: withTimes.json).exitStatus == 0)
        #expect(String(decoding: withTimes.serializedJSON(), as: UTF8.self) == String(decoding: withTimes.json.serialized(), as: UTF8.self))
    }
}
