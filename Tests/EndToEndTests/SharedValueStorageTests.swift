import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// `then` children of a large fulfilled value, against the real daemon and
/// its SQLite store: the value is written once, and read back by every child
/// after a restart.
@Suite("End to end: a value shared by then children is stored once", .serialized)
struct SharedValueStorageTests {
    @Test("200 then children of a 200 KB value add kilobytes to the store, not 40 MB, and have the value after a kill -9")
    func childrenAddNoCopies() throws {
        let daemon = try E2EDurableDaemon.started()
        defer { daemon.remove() }
        let value = JSONValue.string(String(repeating: "x", count: 200_000))
        let client = try daemon.client()
        _ = try client.call("create", ["id": "parent"])
        _ = try client.call("resolve", ["id": "parent", "value": value])
        let children = try client.batch((0..<200).map { index in
            BlockingPromiseClient.BatchEntry("then", ["id": "parent", "childId": .string("child\(index)")])
        })
        #expect(children.allSatisfy { (try? $0.get())?["state"] == "fulfilled" })
        client.close()
        let stored = storeBytes(daemon)
        #expect(stored < 3_000_000, "store and journal hold \(stored) bytes")

        try daemon.restart()
        let reader = try daemon.client()
        defer { reader.close() }
        let record = try reader.call("get", ["id": "child199"])
        #expect(record["state"] == "fulfilled")
        #expect(record["value"] == value)
    }

    /// The database file and its write-ahead log.
    private func storeBytes(_ daemon: E2EDurableDaemon) -> Int {
        [daemon.databasePath, daemon.databasePath + "-wal"].reduce(0) { total, path in
            total + ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
        }
    }
}
