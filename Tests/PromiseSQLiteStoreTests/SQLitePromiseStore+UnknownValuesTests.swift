import Foundation
import GRDB
import Logging
import Promise
import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseDispatch
import PromiseRegistry
import PromiseSQLiteStore
import PromiseServer
import PromiseStore
import Testing

/// A stored `kind`, `on`, `policy` or `state` this code does not know is
/// never read as a default: the registry restores the other promises and
/// logs the row as quarantined, naming the value.
@Suite("SQLitePromiseStore: unknown stored values")
struct SQLitePromiseStoreUnknownValuesTests {
    /// The error lines logged through it: the promise id and reason of each.
    final class ErrorLines: @unchecked Sendable {  // `lock` guards `lines`.
        struct Handler: LogHandler {
            let sink: ErrorLines
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace

            func log(event: LogEvent) {
                guard event.level == .error else { return }
                let metadata = event.metadata ?? [:]
                sink.append((id: metadata["promise.id"]?.description ?? "", reason: metadata["reason"]?.description ?? ""))
            }

            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
        }

        private let lock = NSLock()
        private var lines: [(id: String, reason: String)] = []

        var logged: [(id: String, reason: String)] { lock.withLock { lines } }

        func append(_ line: (id: String, reason: String)) { lock.withLock { lines.append(line) } }
    }

    @Test("rows with an unknown kind, on, policy or state are quarantined and logged; the other promises are served")
    func unknownValuesAreQuarantined() throws {
        try withTemporaryDirectory { directory in
            let path: String
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(upserts: [
                    StoredPromise(id: "a", sequence: 1, kind: .created, created: 0),
                    StoredPromise(id: "b", sequence: 2, kind: .then, parentID: "a", on: .rejected, created: 0),
                ]))
                path = store.path
            }
            let planted = [
                (3, "kind", #"{"id":"kind","sequence":3,"kind":"sleep","created":0,"state":"pending"}"#),
                (4, "on", #"{"id":"on","sequence":4,"kind":"then","parent":"a","on":"always","created":0,"state":"pending"}"#),
                (5, "policy", #"{"id":"policy","sequence":5,"kind":"all","inputs":["a"],"policy":"most","created":0,"state":"pending"}"#),
                (6, "state", #"{"id":"state","sequence":6,"kind":"created","created":0,"state":"lost"}"#),
            ]
            try DatabaseQueue(path: path).write { db in
                for (sequence, id, doc) in planted {
                    try db.execute(
                        sql: "INSERT INTO promises (sequence, id, doc) VALUES (?, ?, ?)", arguments: [sequence, id, doc])
                }
            }

            let errors = ErrorLines()
            let logger = Logger(label: "test") { _ in ErrorLines.Handler(sink: errors) }
            let store = try SQLitePromiseStore(directory: directory)
            let services = SQLitePromiseStoreRegistryTests.Services()
            let loop = SQLitePromiseStoreRegistryTests.Loop()
            let journal = GroupCommit(store: store, loop: loop, writer: .inline, services: services, logger: logger)
            let registry = Registry(limits: DaemonLimits(), services: services, executor: .inline, journal: journal,
                                    logger: logger)
            let summary = registry.restore(try store.load())
            let dispatcher = Dispatcher(registry: registry, limits: DaemonLimits(), logger: logger)
            let peer = SQLitePromiseStoreRegistryTests.Peer(1)
            dispatcher.connectionOpened(peer)
            for (index, id) in ["a", "b", "kind", "on", "policy", "state"].enumerated() {
                let line: JSONValue = ["jsonrpc": "2.0", "id": .int(index), "method": "get", "params": ["id": .string(id)]]
                dispatcher.handle(line: Array(line.serialized()), from: peer)
            }
            loop.drain()

            #expect(summary.quarantined == 4)
            #expect(errors.logged.map(\.id) == ["kind", "on", "policy", "state"])
            #expect(errors.logged.map(\.reason) == [
                #"unreadable: stored promise "kind" has an unknown kind "sleep""#,
                #"unreadable: stored promise "on" has an unknown on "always""#,
                #"unreadable: stored promise "policy" has an unknown policy "most""#,
                #"unreadable: stored promise "state" has an unknown state "lost""#,
            ])
            #expect(peer.lines.map { $0["result"]?["state"] } == ["pending", "pending", nil, nil, nil, nil])
            #expect(peer.lines.dropFirst(2).map { $0["error"]?["code"] } == [-32001, -32001, -32001, -32001])
            #expect(try store.load().quarantined.map(\.id) == ["kind", "on", "policy", "state"])
        }
    }
}
