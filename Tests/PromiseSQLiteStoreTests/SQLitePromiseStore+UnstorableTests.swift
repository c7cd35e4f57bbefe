import Foundation
import GRDB
import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseSQLiteStore
import PromiseServer
import PromiseStore
import Testing

/// A change SQLite refuses for a reason of its own is left out of its
/// commit and the rest commits; a failure of the store fails the whole batch.
@Suite("SQLitePromiseStore unstorable changes")
struct SQLitePromiseStoreUnstorableTests {
    private static func promise(_ id: String, _ sequence: Int, value: JSONValue? = nil) -> StoredPromise {
        StoredPromise(id: id, sequence: sequence, kind: .created, created: 0,
                      state: value == nil ? .pending : .fulfilled, value: value)
    }

    /// Bigger than the 4,096-byte limit the tests open the store with.
    private static let tooBig: JSONValue = .string(String(repeating: "x", count: 5_000))

    @Test("a batch with one row too big (SQLITE_TOOBIG) commits the others and returns that row with SQLite's reason")
    func tooBigRowIsLeftOut() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory, maxLength: 4_096)
            let kept = Self.promise("kept", 1)
            try store.commit(StoreBatch(upserts: [kept, Self.promise("gone", 2)]))
            var resolved = kept
            resolved.state = .fulfilled
            resolved.value = "small"

            let leftOut = try store.commit(StoreBatch(
                upserts: [Self.promise("a", 3), Self.promise("big", 4, value: Self.tooBig), resolved, Self.promise("b", 5)],
                deletions: [StoreDeletion(id: "gone", sequence: 2)]))

            #expect(leftOut == [UnstorableChange(id: "big", sequence: 4, reason: "string or blob too big")])
            #expect(try store.load().promises == [resolved, Self.promise("a", 3), Self.promise("b", 5)])
            // The store goes on writing: the refusal left nothing behind.
            try store.commit(StoreBatch(upserts: [Self.promise("c", 6)]))
            #expect(try store.load().promises.map(\.id) == ["kept", "a", "b", "c"])
        }
    }

    @Test("several rows too big, first and last in the batch, are each left out; a batch of only those commits nothing")
    func everyTooBigRowIsLeftOut() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory, maxLength: 4_096)
            let leftOut = try store.commit(StoreBatch(upserts: [
                Self.promise("big1", 1, value: Self.tooBig), Self.promise("a", 2), Self.promise("big2", 3, value: Self.tooBig),
            ]))
            #expect(leftOut.map(\.id) == ["big1", "big2"])
            #expect(try store.load().promises.map(\.id) == ["a"])
            #expect(try store.commit(StoreBatch(upserts: [Self.promise("big3", 4, value: Self.tooBig)])).map(\.id) == ["big3"])
            #expect(try store.load().promises.map(\.id) == ["a"])
        }
    }

    @Test("a full disk (SQLITE_FULL) still fails the whole batch, a row too big in it included, and applies nothing")
    func fullDiskFailsTheBatch() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory, maxPageCount: 16, maxLength: 4_096)
            try store.commit(StoreBatch(upserts: [Self.promise("kept", 0)]))
            let bulky = (1...100).map { Self.promise("bulky\($0)", $0, value: .string(String(repeating: "y", count: 2_000))) }
            let batch = StoreBatch(upserts: [Self.promise("big", 200, value: Self.tooBig)] + bulky)
            let error = try #require(throws: PromiseStoreError.self) { try store.commit(batch) }
            #expect(error.message == "cannot write to the promise store \(store.path): database or disk is full")
            #expect(try store.load().promises.map(\.id) == ["kept"])
        }
    }

    @Test("SQLite's result codes: a full disk, I/O, locks, a read-only or corrupt file are the store's; too big, a constraint, a mismatch are the row's")
    func classifiesResultCodes() {
        let storeWide: [ResultCode] = [
            .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_IOERR_WRITE, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_NOMEM,
            .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PROTOCOL, .SQLITE_CORRUPT, .SQLITE_ERROR,
        ]
        let ownRow: [ResultCode] = [
            .SQLITE_TOOBIG, .SQLITE_CONSTRAINT, .SQLITE_CONSTRAINT_PRIMARYKEY, .SQLITE_MISMATCH, .SQLITE_RANGE,
            ResultCode(rawValue: 1234),
        ]
        #expect(storeWide.filter { !SQLiteBatchWriter.Failure(code: $0.rawValue, message: "").isStoreWide } == [])
        #expect(ownRow.filter { SQLiteBatchWriter.Failure(code: $0.rawValue, message: "").isStoreWide } == [])
    }
}
