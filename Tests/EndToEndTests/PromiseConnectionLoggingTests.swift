import Foundation
import Logging
import Promise
import PromiseClient
import Synchronization
import Testing

/// What a PromiseConnection logs through the `Logger` it is given.
@Suite("PromiseConnection: logging")
struct PromiseConnectionLoggingTests {
    /// The messages logged, with their levels.
    private final class Messages: Sendable {
        let list = Mutex<[(Logger.Level, String)]>([])
    }

    /// Keeps every message logged in `messages`.
    private struct CapturingHandler: LogHandler {
        let messages: Messages
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            messages.list.withLock { $0.append((event.level, "\(event.message)")) }
        }
    }

    @Test("losing the daemon logs a warning, connecting again a notice; a closed connection logs neither")
    func reconnectionsLogged() async throws {
        let daemon = try E2EDurableDaemon.started()
        defer { daemon.remove() }
        let messages = Messages()
        let logger = Logger(label: "test") { _ in CapturingHandler(messages: messages) }
        let remote = try await PromiseConnection.connect(socketPath: daemon.socketPath, logger: logger)
        try await remote.create("kept")

        daemon.kill9()
        try daemon.start()
        #expect(try await remote.get("kept").state == PromiseRecord.State.pending)
        remote.close()
        // Time for the reader to see the close, and for a wrong "ended" notice to be logged.
        try await Task.sleep(for: .milliseconds(500))

        let logged = messages.list.withLock { $0.filter { $0.0 >= .notice } }
        #expect(logged.map(\.0) == [.warning, .notice])
        #expect(logged.map(\.1) == ["lost the daemon; reconnecting", "connected to the daemon again"])
    }
}
