import Foundation
import GRDB
import PromiseModel
import PromiseRPC
@testable import PromiseSQLiteStore
import PromiseServer
import PromiseStore
import Testing

/// Rows that cannot be loaded are moved to the `quarantine` table, as they
/// were, and the rest loads: one bad row never stops the daemon.
@Suite("SQLitePromiseStore quarantine")
struct SQLitePromiseStoreQuarantineTests {
    private static func promise(_ id: String, _ sequence: Int) -> StoredPromise {
        StoredPromise(id: id, sequence: sequence, kind: .created, created: 0)
    }

    /// A JSON document holding a value nested `depth` arrays deep.
    private static func nestedDocument(id: String, sequence: Int, depth: Int) -> String {
        let value = String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
        return #"{"created":0,"id":"\#(id)","kind":"created","sequence":\#(sequence),"state":"fulfilled","value":\#(value)}"#
    }

    /// A store holding `good`, plus `rows` (sequence, id, doc) written with
    /// GRDB behind its back; returns the path of the database file.
    private func plant(in directory: String, good: [StoredPromise], rows: [(Int, String, any DatabaseValueConvertible)]) throws -> String {
        let path: String
        do {
            let store = try SQLitePromiseStore(directory: directory)
            try store.commit(StoreBatch(upserts: good))
            path = store.path
        }
        let raw = try DatabaseQueue(path: path)
        try raw.write { db in
            for (sequence, id, doc) in rows {
                try db.execute(
                    sql: "INSERT INTO promises (sequence, id, doc) VALUES (?, ?, ?)", arguments: [sequence, id, doc])
            }
        }
        return path
    }

    /// Every row of `table`: sequence, id, doc, each as SQLite holds it.
    private func rows(_ table: String, at path: String) throws -> [[DatabaseValue]] {
        try DatabaseQueue(path: path).read { db in
            try Row.fetchAll(db, sql: "SELECT sequence, id, doc FROM \(table) ORDER BY sequence").map {
                [$0[0], $0[1], $0[2]]
            }
        }
    }

    @Test("a row nested 600 levels deep is moved to quarantine byte for byte, with its reason, and the others load")
    func deepRowIsQuarantined() throws {
        try withTemporaryDirectory { directory in
            let doc = Self.nestedDocument(id: "x128", sequence: 5, depth: 600)
            let path = try plant(
                in: directory, good: [Self.promise("a", 1), Self.promise("b", 9)], rows: [(5, "x128", doc)])
            let before = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))

            let contents = try SQLitePromiseStore(directory: directory).load()

            #expect(contents.promises == [Self.promise("a", 1), Self.promise("b", 9)])
            let quarantined = try #require(contents.quarantined.first)
            #expect(contents.quarantined.count == 1)
            #expect(quarantined.id == "x128")
            #expect(quarantined.sequence == 5)
            #expect(quarantined.reason == "not valid JSON: nesting deeper than 512 levels at byte 594")
            #expect(quarantined.time >= before && quarantined.time <= before + 60_000)
            #expect(try rows("quarantine", at: path) == [[5.databaseValue, "x128".databaseValue, doc.databaseValue]])
            #expect(try rows("promises", at: path).map { $0[1] } == ["a".databaseValue, "b".databaseValue])
            let reason = try DatabaseQueue(path: path).read { db in
                try Row.fetchOne(db, sql: "SELECT reason, quarantined FROM quarantine")
            }
            #expect(reason?["reason"] == "not valid JSON: nesting deeper than 512 levels at byte 594")
            #expect(reason?["quarantined"] == quarantined.time)
        }
    }

    @Test(
        "a row that is not a stored promise is quarantined as it was, saying why, and the others load",
        arguments: [
            ("{not json".databaseValue, "not valid JSON"),
            (#"{"id":"bad","sequence":3,"kind":"created","created":0}"#.databaseValue, #"unreadable: a stored promise has no "state""#),
            (#"{"id":"bad","sequence":3,"kind":"created","created":0,"state":"lost"}"#.databaseValue,
             #"unreadable: stored promise "bad" has an unknown state "lost""#),
            (#"{"id":"bad","sequence":3,"kind":"sleep","created":0,"state":"pending"}"#.databaseValue,
             #"unreadable: stored promise "bad" has an unknown kind "sleep""#),
            (#"{"id":"bad","sequence":3,"kind":"then","parent":"a","on":"always","created":0,"state":"pending"}"#.databaseValue,
             #"unreadable: stored promise "bad" has an unknown on "always""#),
            (#"{"id":"bad","sequence":3,"kind":"all","inputs":["a"],"policy":"some","created":0,"state":"pending"}"#.databaseValue,
             #"unreadable: stored promise "bad" has an unknown policy "some""#),
            (#"{"id":"other","sequence":3,"kind":"created","created":0,"state":"pending"}"#.databaseValue,
             #"holds the document of "other""#),
            ("42".databaseValue, "unreadable: a stored promise is not an object"),
            (Data([0xFF, 0x00, 0x7B]).databaseValue, "not valid JSON"),
        ] as [(DatabaseValue, String)])
    func undecodableRowIsQuarantined(doc: DatabaseValue, reason: String) throws {
        try withTemporaryDirectory { directory in
            let path = try plant(in: directory, good: [Self.promise("a", 1)], rows: [(3, "bad", doc)])

            let contents = try SQLitePromiseStore(directory: directory).load()

            #expect(contents.promises == [Self.promise("a", 1)])
            #expect(contents.quarantined.map(\.id) == ["bad"])
            #expect(contents.quarantined.first?.reason.hasPrefix(reason) == true, "\(contents.quarantined)")
            #expect(try rows("quarantine", at: path) == [[3.databaseValue, "bad".databaseValue, doc]])
            #expect(try rows("promises", at: path).map { $0[1] } == ["a".databaseValue])
        }
    }

    @Test("an id stored twice: the first row loads, each later one is quarantined naming the first's sequence")
    func duplicateIDIsQuarantined() throws {
        try withTemporaryDirectory { directory in
            let first = Self.promise("twice", 2)
            var second = Self.promise("twice", 4)
            second.state = .fulfilled
            let doc = String(decoding: second.serializedJSON(), as: UTF8.self)
            let path = try plant(in: directory, good: [Self.promise("a", 1), first], rows: [(4, "twice", doc)])

            let contents = try SQLitePromiseStore(directory: directory).load()

            #expect(contents.promises == [Self.promise("a", 1), first])
            #expect(contents.quarantined.map(\.id) == ["twice"])
            #expect(contents.quarantined.first?.sequence == 4)
            #expect(contents.quarantined.first?.reason == "stored twice: the promise under sequence 2 was loaded")
            #expect(try rows("quarantine", at: path) == [[4.databaseValue, "twice".databaseValue, doc.databaseValue]])
        }
    }

    @Test("what was quarantined stays listed at later loads, oldest first, and is moved only once")
    func quarantineIsKept() throws {
        try withTemporaryDirectory { directory in
            let path = try plant(in: directory, good: [Self.promise("a", 1)], rows: [(2, "bad1", "{")])
            do {
                let store = try SQLitePromiseStore(directory: directory)
                #expect(try store.load().quarantined.map(\.id) == ["bad1"])
            }
            try DatabaseQueue(path: path).write { db in
                try db.execute(sql: "INSERT INTO promises (sequence, id, doc) VALUES (3, 'bad2', '[')")
            }
            do {
                let store = try SQLitePromiseStore(directory: directory)
                #expect(try store.load().quarantined.map(\.id) == ["bad1", "bad2"])
                #expect(try store.load().quarantined.map(\.id) == ["bad1", "bad2"])
                #expect(try store.load().promises == [Self.promise("a", 1)])
            }
            #expect(try rows("quarantine", at: path).count == 2)
        }
    }
}
