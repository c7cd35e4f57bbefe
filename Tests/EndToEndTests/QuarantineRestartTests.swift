import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseSQLiteStore
import PromiseServer
import PromiseStore
import Testing

/// The real daemon restarting over a store holding a row it cannot load.
@Suite("durable store: a row that cannot be loaded")
struct QuarantineRestartTests {
    /// A value nested `depth` arrays deep: past the JSON parser's 512 levels.
    private static func nested(_ depth: Int) -> JSONValue {
        (0..<depth).reduce(JSONValue.int(1)) { inner, _ in .array([inner]) }
    }

    private static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require(attributes[.posixPermissions] as? NSNumber).intValue
    }

    @Test("the daemon restarts over a row nested 600 levels deep, serves, counts it in info, and rejects what depends on it")
    func restartsOverAnUnloadableRow() throws {
        let daemon = try E2EDurableDaemon.started()
        defer { daemon.remove() }
        let client = try daemon.client()
        try client.call("create", ["id": "kept"])
        try client.call("resolve", ["id": "kept", "value": "A"])
        client.close()
        #expect(daemon.terminate() == 0)

        // Planted while the daemon is down, through the store itself, which writes any depth.
        do {
            let store = try SQLitePromiseStore(directory: daemon.storeDirectory)
            try store.commit(StoreBatch(upserts: [
                StoredPromise(id: "x128", sequence: 1000, kind: .created, created: 1, settled: 2,
                              state: .fulfilled, value: Self.nested(600)),
                StoredPromise(id: "child", sequence: 1001, kind: .then, parentID: "x128", on: .fulfilled, created: 3),
                StoredPromise(id: "both", sequence: 1002, kind: .combinator(.all), inputIDs: ["kept", "x128"], policy: .failFast,
                              created: 3),
            ]))
        }

        try daemon.start()
        let info = try daemon.call("info")
        #expect(info["store"]?["quarantined"] == 1, "\(info)")
        #expect(info["store"]?["writable"] == true, "\(info)")
        #expect(try daemon.exists("x128") == false)
        #expect(try daemon.record("kept")?.value == "A")
        let reason = "not valid JSON: nesting deeper than 512 levels"
        let child = try #require(try daemon.record("child"))
        #expect(child.state == .rejected)
        #expect(child.json["reason"]?["message"]?.stringValue?.hasPrefix(
            #"cannot be restored: its parent "x128" was quarantined: "# + reason) == true, "\(child.json)")
        let both = try #require(try daemon.record("both"))
        #expect(both.json["reason"]?["message"]?.stringValue?.hasPrefix(
            #"cannot be restored: its input "x128" was quarantined: "# + reason) == true, "\(both.json)")
        try daemon.call("create", ["id": "after"])
        #expect(daemon.log.contains("x128") && daemon.log.contains("quarantine"), "\(daemon.logTail())")

        // Still there for inspection, and still counted, after another restart.
        try daemon.restart()
        #expect(try daemon.call("info")["store"]?["quarantined"] == 1)
        #expect(try daemon.exists("after"))
    }

    @Test("the daemon's store file and its WAL are readable by their owner only (0600)")
    func storeFilesAreOwnerOnly() throws {
        try E2EDurableDaemon.with { daemon in
            try daemon.call("create", ["id": "a"])
            #expect(try Self.mode(daemon.databasePath) == 0o600)
            #expect(try Self.mode(daemon.databasePath + "-wal") == 0o600)
        }
    }
}
