import Foundation
import Promise
import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseRegistry
@testable import PromiseStore
import Testing

/// Progress only moves forward, and a restart keeps it where clients saw it.
@Suite("Registry progress across a restart")
struct RegistryProgressRestartTests {
    @Test("a lower progress report leaves the record where it was, before and after a restart")
    func progressNeverGoesBackAcrossARestart() throws {
        let store = MemoryPromiseStore()
        let first = RPCHarness(store: store)
        let peer = first.connect()
        first.call("create", ["id": "job"], from: peer)
        first.call("progress", ["id": "job", "progress": 0.8, "message": "compiling"], from: peer)
        first.call("progress", ["id": "job", "progress": 0.5, "message": "linking"], from: peer)
        let before = first.record("job", from: peer)
        #expect(before["progress"] == 0.8)
        #expect(before["progressMessage"] == "linking")
        #expect(store["job"]?.progress == 0.8)

        let second = RPCHarness(store: store)
        second.registry.restore(try store.load())
        second.settleStore()
        #expect(second.record("job", from: second.connect()) == before)
    }
}
