import PromiseJSON
@testable import PromiseDispatch
@testable import PromiseRegistry
@testable import PromiseModel
@testable import PromiseRPC
import Testing

/// The wire side of the registry's events: the notification lines a
/// connection reads for `progress` and `log`, and who receives them.
@Suite("NotificationWriter")
struct NotificationWriterTests {
    @Test("a progress event is the progress notification, with its message only when there is one")
    func progressLine() {
        let harness = RPCHarness()
        let writer = NotificationWriter(registry: harness.registry)
        let plain = writer.line(for: .progress(id: "a", fraction: 0.5, message: nil))
        let told = writer.line(for: .progress(id: "a", fraction: 0.25, message: "half"))
        #expect(String(decoding: plain, as: UTF8.self)
            == #"{"jsonrpc":"2.0","method":"progress","params":{"id":"a","progress":0.5}}"# + "\n")
        #expect(String(decoding: told, as: UTF8.self)
            == #"{"jsonrpc":"2.0","method":"progress","params":{"id":"a","message":"half","progress":0.25}}"# + "\n")
    }

    @Test("a log event is the log notification, its text as data and its offset in the stream")
    func logLine() {
        let harness = RPCHarness()
        let writer = NotificationWriter(registry: harness.registry)
        let line = writer.line(for: .log(id: "s", stream: .stderr, text: "é\n", offset: 7))
        #expect(String(decoding: line, as: UTF8.self)
            == #"{"jsonrpc":"2.0","method":"log","params":{"data":"é\n","id":"s","offset":7,"stream":"stderr"}}"# + "\n")
    }

    @Test("a progress report reaches the subscribers of its promise only, once each")
    func progressReachesSubscribersOnly() {
        let harness = RPCHarness()
        let owner = harness.connect()
        let watcher = harness.connect()
        let other = harness.connect()
        harness.call("create", ["id": "a"], from: owner)
        harness.call("create", ["id": "b"], from: owner)
        harness.call("subscribe", ["ids": ["a"]], from: watcher)
        harness.call("subscribe", ["ids": ["b"]], from: other)
        let before = (watcher.sent.count, other.sent.count)
        harness.call("progress", ["id": "a", "progress": 0.5], from: owner)
        #expect(watcher.sent.count == before.0 + 1)
        #expect(other.sent.count == before.1)
        #expect(watcher.sent.last.map { String(decoding: $0, as: UTF8.self) }
            == #"{"jsonrpc":"2.0","method":"progress","params":{"id":"a","progress":0.5}}"#)
    }
}
