import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// `all`, `any`, `race` and `allSettled` over one large value named many
/// times, against the real daemon and its SQLite store: the value is
/// written once, the combinators refer to it, and after a kill -9 each
/// combinator's value comes back byte for byte.
@Suite("End to end: combined values refer to their inputs' values", .serialized)
struct CombinedValueStorageTests {
    @Test("60 each of all, any, race and allSettled over a 200 KB value named 80 times add under 2 MB to the store, and their values survive a kill -9 byte for byte")
    func combinatorsAddNoCopies() throws {
        let daemon = try E2EDurableDaemon.started()
        defer { daemon.remove() }
        let value = JSONValue.string(String(repeating: "x", count: 200_000))
        let ids = JSONValue.array(Array(repeating: "parent", count: 80))
        let kinds = ["all", "any", "race", "allSettled"]
        let client = try daemon.client(timeout: .seconds(120))
        _ = try client.call("create", ["id": "parent"])
        let storedBefore = storeBytes(daemon)
        // Made while the value is pending, so that the answers are short;
        // all of them settle with the one resolve.
        let made = try client.batch(kinds.flatMap { kind in
            (0..<60).map { index in BlockingPromiseClient.BatchEntry(kind, ["ids": ids, "id": .string("\(kind)\(index)")]) }
        }, timeout: .seconds(120))
        #expect(made.allSatisfy { (try? $0.get())?["state"] == "pending" })
        _ = try client.call("resolve", ["id": "parent", "value": value])
        // And one of each made over the value once it is fulfilled.
        for kind in kinds {
            _ = try client.call(kind, ["ids": ids, "id": .string("\(kind)Late")])
            let settled = try client.call("wait", ["id": .string("\(kind)Late")])
            #expect(settled["state"] == "fulfilled")
        }
        let checked = kinds.flatMap { ["\($0)59", "\($0)Late"] }
        let before = try checked.map { try valueText(of: $0, from: client) }
        client.close()
        let grown = storeBytes(daemon) - storedBefore
        #expect(grown < 2_000_000, "the store grew by \(grown) bytes")

        daemon.kill9()
        try daemon.start()
        let reader = try daemon.client(timeout: .seconds(120))
        defer { reader.close() }
        #expect(try checked.map { try valueText(of: $0, from: reader) } == before)
        #expect(try reader.call("get", ["id": "all0"])["state"] == "fulfilled")
    }

    /// The JSON text of `id`'s value, as the daemon answers it.
    private func valueText(of id: String, from client: BlockingPromiseClient) throws -> [UInt8] {
        let record = try client.call("get", ["id": .string(id)])
        return Array((record["value"] ?? .null).serialized())
    }

    /// The database file and its write-ahead log.
    private func storeBytes(_ daemon: E2EDurableDaemon) -> Int {
        [daemon.databasePath, daemon.databasePath + "-wal"].reduce(0) { total, path in
            total + ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
        }
    }
}
