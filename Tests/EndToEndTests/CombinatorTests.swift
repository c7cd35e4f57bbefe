import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

@Suite("all (four policies), any, race, allSettled")
struct CombinatorTests {
    /// Creates the ids, runs `body`, and returns nothing: keeps tests short.
    private func create(_ client: BlockingPromiseClient, _ ids: String...) throws {
        for id in ids { try client.call("create", ["id": .string(id)]) }
    }

    private func wait(_ client: BlockingPromiseClient, _ id: String) throws -> BlockingPromiseClient.Record {
        try E2E.record(client.call("wait", ["id": .string(id), "timeoutMs": 5000]))
    }

    private func state(_ client: BlockingPromiseClient, _ id: String) throws -> BlockingPromiseClient.Record.State {
        try E2E.record(client.call("get", ["id": .string(id)])).state
    }

    @Test("all fulfils with the values in input order")
    func allFulfils() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a", "b", "c")
            let joined = try E2E.record(client.call("all", ["ids": ["a", "b", "c"], "id": "j"]))
            #expect(joined.id == "j")
            #expect(joined.state == .pending)
            try client.call("resolve", ["id": "c", "value": 3])
            try client.call("resolve", ["id": "a", "value": 1])
            try client.call("resolve", ["id": "b", "value": 2])
            #expect(try wait(client, "j").value == [1, 2, 3])
        }
    }

    @Test("all of no ids fulfils with an empty array")
    func allEmpty() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let joined = try E2E.record(client.call("all", ["ids": []]))
            #expect(try wait(client, joined.id).value == [])
        }
    }

    @Test("all fail-fast rejects with the first rejection while others are pending")
    func allFailFast() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a", "b")
            try client.call("all", ["ids": ["a", "b"], "id": "j", "policy": "fail-fast"])
            try client.call("reject", ["id": "b", "reason": ["message": "b failed", "code": 2]])
            let joined = try wait(client, "j")
            #expect(joined.state == .rejected)
            #expect(joined.reasonMessage == "b failed")
        }
    }

    @Test("all all-errors waits for every input, then rejects")
    func allAllErrors() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a", "b", "c")
            try client.call("all", ["ids": ["a", "b", "c"], "id": "j", "policy": "all-errors"])
            try client.call("reject", ["id": "a", "reason": "first"])
            try client.call("reject", ["id": "c", "reason": "second"])
            Thread.sleep(forTimeInterval: 0.1)
            #expect(try state(client, "j") == .pending)
            try client.call("resolve", ["id": "b", "value": 2])
            let joined = try wait(client, "j")
            #expect(joined.state == .rejected)
            let text = joined.reason.map { "\($0)" } ?? ""
            #expect(text.contains("first") && text.contains("second"), "\(text)")
        }
    }

    @Test("all ignore-errors fulfils with the fulfilled values only")
    func allIgnoreErrors() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a", "b", "c")
            try client.call("all", ["ids": ["a", "b", "c"], "id": "j", "policy": "ignore-errors"])
            try client.call("resolve", ["id": "a", "value": 1])
            try client.call("reject", ["id": "b", "reason": "no"])
            try client.call("resolve", ["id": "c", "value": 3])
            let joined = try wait(client, "j")
            #expect(joined.state == .fulfilled)
            #expect(joined.value == [1, 3])
        }
    }

    @Test("all nulls fulfils with null in place of each failure")
    func allNulls() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a", "b")
            try client.call("all", ["ids": ["a", "b"], "id": "j", "policy": "nulls"])
            try client.call("resolve", ["id": "a", "value": 1])
            try client.call("cancel", ["id": "b"])
            let joined = try wait(client, "j")
            #expect(joined.state == .fulfilled)
            #expect(joined.value == [1, nil])
        }
    }

    @Test("all over an unknown id answers -32001")
    func allUnknownInput() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a")
            let error = #expect(throws: RPCError.self) { try client.call("all", ["ids": ["a", "ghost"]]) }
            #expect(error?.code == .noSuchPromise)
        }
    }

    @Test("any fulfils with the first fulfilment and ignores rejections before it")
    func anyFirstFulfilment() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a", "b", "c")
            try client.call("any", ["ids": ["a", "b", "c"], "id": "j"])
            try client.call("reject", ["id": "a", "reason": "no"])
            try client.call("resolve", ["id": "c", "value": "c won"])
            try client.call("resolve", ["id": "b", "value": "too late"])
            #expect(try wait(client, "j").value == "c won")
        }
    }

    @Test("any rejects once every input is rejected")
    func anyAllRejected() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a", "b")
            try client.call("any", ["ids": ["a", "b"], "id": "j"])
            try client.call("reject", ["id": "a", "reason": "one"])
            Thread.sleep(forTimeInterval: 0.05)
            #expect(try state(client, "j") == .pending)
            try client.call("reject", ["id": "b", "reason": "two"])
            #expect(try wait(client, "j").state == .rejected)
        }
    }

    @Test("race settles as the first input to settle, rejection included")
    func race() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a", "b", "x", "y")
            try client.call("race", ["ids": ["a", "b"], "id": "r1"])
            try client.call("resolve", ["id": "b", "value": "b"])
            try client.call("resolve", ["id": "a", "value": "a"])
            #expect(try wait(client, "r1").value == "b")

            try client.call("race", ["ids": ["x", "y"], "id": "r2"])
            try client.call("reject", ["id": "y", "reason": "y lost"])
            try client.call("resolve", ["id": "x", "value": 1])
            let second = try wait(client, "r2")
            #expect(second.state == .rejected)
            #expect(second.reasonMessage == "y lost")
        }
    }

    @Test("race and any of no ids reject")
    func emptyRaceAndAny() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            for method in ["race", "any"] {
                do {
                    let record = try E2E.record(client.call(method, ["ids": []]))
                    #expect(try wait(client, record.id).state == .rejected, "\(method)")
                } catch let error as RPCError {
                    #expect(error.code == .invalidParams, "\(method)")
                }
            }
        }
    }

    @Test("allSettled fulfils after every input settled, with one outcome each, in order")
    func allSettled() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a", "b", "c")
            try client.call("allSettled", ["ids": ["a", "b", "c"], "id": "s"])
            try client.call("resolve", ["id": "a", "value": 1])
            try client.call("reject", ["id": "b", "reason": "bad"])
            Thread.sleep(forTimeInterval: 0.05)
            #expect(try state(client, "s") == .pending)
            try client.call("cancel", ["id": "c"])
            let settled = try wait(client, "s")
            #expect(settled.state == .fulfilled)
            let outcomes = try #require(settled.value?.arrayValue)
            #expect(outcomes.count == 3)
            #expect(outcomes[0]["state"] == "fulfilled")
            #expect(outcomes[0]["value"] == 1)
            #expect(outcomes[1]["state"] == "rejected")
            #expect(outcomes[2]["state"] == "cancelled" || outcomes[2]["state"] == "rejected")
        }
    }

    @Test("cancelling a combinator's result cancels inputs that feed nothing else")
    func cancelCombinator() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try create(client, "a", "b")
            try client.call("all", ["ids": ["a", "b"], "id": "j"])
            try client.call("cancel", ["id": "j"])
            #expect(E2E.eventually { (try? state(client, "a")) == .cancelled })
            #expect(try state(client, "b") == .cancelled)
        }
    }
}
