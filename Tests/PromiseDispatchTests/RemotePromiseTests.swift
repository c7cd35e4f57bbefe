@testable import PromiseJSON
@testable import PromiseRegistry
import PromiseStore
import Testing

/// A promise's details under subscriptions made through the dispatcher
/// (the record's layout alone is in PromiseRegistryTests).
@Suite("RemotePromise, subscribed through the dispatcher")
struct RemotePromiseTests {
    @Test("a created promise a client subscribed to gets a core promise in details while pending, and no details once settled")
    func subscribedPromiseLetsItsDetailsGoOnceSettled() throws {
        let harness = RPCHarness()
        let subscriber = harness.connect()
        let settler = harness.connect()
        harness.call("create", ["id": "a"], from: settler)
        harness.call("subscribe", ["ids": ["a"]], from: subscriber)
        let entry = try #require(harness.registry.entries["a"])
        #expect(entry.corePromise != nil)
        #expect(entry.details != nil)
        harness.call("resolve", ["id": "a", "value": 1], from: settler)
        #expect(entry.state == "fulfilled")
        #expect(entry.corePromise == nil)
        #expect(entry.details == nil)
        #expect(subscriber.takeMessages().last?["params"]?["state"] == "fulfilled")
    }
}
