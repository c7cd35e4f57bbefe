import Foundation
import GRDB
import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseSQLiteStore
import PromiseServer
import PromiseStore
import Testing

@Suite("SQLitePromiseStore: step logs")
struct SQLitePromiseStoreLogsTests {
    private let step = StoredPromise(id: "step", sequence: 3, kind: .then, parentID: "p", exec: ["make"],
                                     created: 1, settled: 2, state: .rejected, reason: ["message": "boom"])
    /// Bytes that are not UTF-8 and a NUL: kept as they were written.
    private let log = StoredStepLog(id: "step", sequence: 3, stdout: [0x6F, 0x6B, 0x00, 0xFF, 0x0A],
                                    stderr: Array("fail\n".utf8), stdoutDropped: 12, stderrDropped: 0)

    @Test("a log comes back byte for byte after the store is reopened, with its dropped counts")
    func survivesReopen() throws {
        try withTemporaryDirectory { directory in
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(upserts: [step], logs: [log]))
            }
            let reopened = try SQLitePromiseStore(directory: directory)
            #expect(try reopened.load().logs == [log])
        }
    }

    @Test("a later log of the same promise replaces the earlier one")
    func laterReplaces() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory)
            try store.commit(StoreBatch(upserts: [step], logs: [log]))
            var later = log
            later.stderr = Array("more\n".utf8)
            later.stderrDropped = 5
            try store.commit(StoreBatch(logs: [later]))
            #expect(try store.load().logs == [later])
        }
    }

    /// Rows in the `logs` table, read with the store closed (it holds SQLite's exclusive lock).
    private func logRows(_ directory: String) throws -> Int? {
        try DatabaseQueue(path: directory + "/promises.sqlite3").read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM logs")
        }
    }

    @Test("deleting a promise deletes its log in the same commit")
    func deletedWithPromise() throws {
        try withTemporaryDirectory { directory in
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(upserts: [step], logs: [log]))
                #expect(try store.load().logs == [log])
                try store.commit(StoreBatch(deletions: [step.deletion]))
            }
            // Counted before any other load, which would delete a log left behind.
            #expect(try logRows(directory) == 0)
        }
    }

    @Test("a log whose promise is not stored is not loaded, and is deleted")
    func orphanDropped() throws {
        try withTemporaryDirectory { directory in
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(logs: [log]))
            }
            #expect(try logRows(directory) == 1)
            do {
                let store = try SQLitePromiseStore(directory: directory)
                #expect(try store.load().logs.isEmpty)
            }
            #expect(try logRows(directory) == 0)
        }
    }

    @Test("the schema's migration for logs is named v5")
    func migrationName() throws {
        try withTemporaryDirectory { directory in
            _ = try SQLitePromiseStore(directory: directory)
            let names = try DatabaseQueue(path: directory + "/promises.sqlite3").read { db in
                try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
            }
            #expect(names.contains("v5"))
        }
    }
}
