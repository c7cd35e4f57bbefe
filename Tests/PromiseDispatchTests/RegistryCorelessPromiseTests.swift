@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
import Testing

/// A promise made by `create` has no core promise until something needs
/// one: these check that having one or not changes nothing a client sees.
@Suite("Created promises without a core promise")
struct RegistryCorelessPromiseTests {
    /// The record without what differs by design between the two promises compared.
    private static func comparable(_ record: JSONValue) -> JSONValue {
        guard case .object(var members) = record else { return record }
        for key in ["id", "created", "settled", "children"] { members[key] = nil }
        if case .object(var reason)? = members["reason"] {
            reason["origin"] = nil
            members["reason"] = .object(reason)
        }
        return .object(members)
    }

    @Test("resolved, rejected or cancelled, a promise that never had a core promise answers the record of one that had")
    func settledRecordsMatch() {
        let harness = RPCHarness()
        let peer = harness.connect()
        for (method, params) in [("resolve", ["value": ["n": 1]]), ("reject", ["reason": "no"]), ("cancel", [:])] as [(String, JSONValue)] {
            harness.call("create", ["id": .string("plain.\(method)")], from: peer)
            harness.call("create", ["id": .string("cored.\(method)")], from: peer)
            // A `then` child gives the parent its core promise.
            harness.call("then", ["id": .string("cored.\(method)")], from: peer)
            guard case .object(var members) = params else { return }
            members["id"] = .string("plain.\(method)")
            let plain = harness.call(method, .object(members), from: peer)
            members["id"] = .string("cored.\(method)")
            let cored = harness.call(method, .object(members), from: peer)
            #expect(plain["state"] == cored["state"], "\(method)")
            #expect(Self.comparable(plain) == Self.comparable(cored), "\(method)")
            #expect(Self.comparable(harness.record("plain.\(method)", from: peer)) == Self.comparable(plain), "\(method)")
        }
        #expect(harness.state("plain.resolve", from: peer) == "fulfilled")
        #expect(harness.record("plain.reject", from: peer)["progress"] == 0)
        #expect(harness.state("plain.cancel", from: peer) == "cancelled")
    }

    @Test("settling a promise without a core promise a second time answers -32002 and keeps the first outcome")
    func secondSettleRefused() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        #expect(harness.errorCode("reject", ["id": "a"], from: peer) == RPCError.Code.alreadySettled.rawValue)
        #expect(harness.errorCode("resolve", ["id": "a", "value": 2], from: peer) == RPCError.Code.alreadySettled.rawValue)
        #expect(harness.record("a", from: peer)["value"] == 1)
    }

    @Test("a then child made before and one made after the resolve both take the value; wait and subscribe hear the settlement")
    func chainsAndWatchersSeeTheSettlement() throws {
        let harness = RPCHarness()
        let peer = harness.connect()
        let watcher = harness.connect()
        harness.call("create", ["id": "a"], from: peer)
        harness.call("create", ["id": "b"], from: peer)
        let before = try #require(harness.call("then", ["id": "a"], from: peer)["id"]?.stringValue)
        harness.call("subscribe", ["ids": ["b"]], from: watcher)
        let wait = harness.request("wait", ["id": "b"], from: watcher)
        harness.call("resolve", ["id": "a", "value": "A"], from: peer)
        harness.call("resolve", ["id": "b", "value": "B"], from: peer)
        let after = try #require(harness.call("then", ["id": "a"], from: peer)["id"]?.stringValue)
        #expect(harness.record(before, from: peer)["value"] == "A")
        #expect(harness.record(after, from: peer)["value"] == "A")
        let told = watcher.takeMessages()
        #expect(told.first { $0["id"] == .int(wait) }?["result"]?["value"] == "B")
        #expect(JSONValue.notifications("settled", in: told).map { $0["params"]?["value"] } == ["B"])
    }

    @Test("a leased promise without a core promise is rejected when its holder's connection closes")
    func leaseExpiresWithoutCore() {
        let harness = RPCHarness()
        let holder = harness.connect()
        let other = harness.connect()
        harness.call("create", ["id": "job", "lease": true], from: holder)
        harness.close(holder)
        let record = harness.record("job", from: other)
        #expect(record["state"] == "rejected")
        #expect(record["reason"]?["message"] == "lease expired: the connection that created it closed")
    }
}
