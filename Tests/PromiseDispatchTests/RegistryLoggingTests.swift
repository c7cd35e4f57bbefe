import Logging
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
import PromiseTestSupport
import Testing

@Suite("Registry logging")
struct RegistryLoggingTests {
    @Test("creations and settlements are logged at debug level, and no longer once the level is raised")
    func debugMessagesFollowTheLevel() {
        let harness = RPCHarness()
        let peer = harness.connect()
        let log = RecordingLogHandler.Records()
        harness.registry.logger = Logger(label: "test.registry") { _ in RecordingLogHandler(records: log) }
        harness.call("create", ["id": "a"], from: peer)
        harness.call("resolve", ["id": "a", "value": 1], from: peer)
        #expect(log.entries.map(\.message) == ["Promise created", "Promise settled"])
        #expect(log.entries.map { $0.metadata["promise.id"] } == ["a", "a"])
        #expect(log.entries.last?.metadata["promise.state"] == "fulfilled")
        harness.registry.logger.logLevel = .info
        harness.call("create", ["id": "b"], from: peer)
        harness.call("resolve", ["id": "b", "value": 1], from: peer)
        #expect(log.entries.count == 2)
        harness.registry.logger.logLevel = .debug
        harness.call("create", ["id": "c"], from: peer)
        #expect(log.entries.map { $0.metadata["promise.id"] } == ["a", "a", "c"])
    }
}
