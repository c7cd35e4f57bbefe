import Logging
import Promise
@testable import PromiseModel
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// The end of a daemon: the server lets its handler (the dispatcher and its
/// registry) go before the loop runs the work left in its queue.
@Suite("Registry at shutdown")
struct RegistryShutdownTests {
    @Test("a journal cut left in the loop's queue after the registry is gone writes nothing and does not trap")
    func cutAfterTheRegistryIsGone() throws {
        let logger = Logger(label: "test.shutdown") { _ in SwiftLogNoOpLogHandler() }
        let store = MemoryPromiseStore()
        let loop = RPCManualExecutor()
        let services = RPCFakeLoop()
        let journal = GroupCommit(store: store, loop: loop, writer: .inline, services: services, logger: logger)
        var registry: Registry? = Registry(limits: DaemonLimits(), services: services, executor: .inline,
                                           journal: journal, logger: logger)
        weak let released = registry
        // A change made as the daemon stops (a connection closing): its cut waits for the next turn.
        journal.touch("late")
        #expect(!loop.isEmpty)
        registry = nil
        #expect(released == nil)
        // The daemon crashed here, one clean stop in several under the simulation: "Attempted to read
        // an unowned reference but object … was already destroyed".
        loop.drain()
        #expect(store["late"] == nil)
    }
}
