import GRDB
import GRDBSQLite
import PromiseRPC

/// Writes one ``StoreBatch`` in one transaction by stepping, through SQLite's
/// C API, statements that GRDB prepared and keeps cached.
///
/// Commits are on the critical path of every durable answer, and GRDB's
/// `write` and `Statement.execute` cost more than SQLite itself: argument
/// arrays boxed per row, statement bookkeeping, and `BEGIN` and `COMMIT`
/// parsed afresh on every call. Callgrind, on the commit thread: a commit of
/// one promise took 67,900 instructions through GRDB and takes 32,300 this
/// way; a promise in batches of 100, 17,900 and 11,300. GRDB still opens,
/// configures, migrates and reads the store.
///
/// Made anew for each commit: GRDB finalizes its cached statements when the
/// schema changes, so their handles are not kept across calls.
///
/// ```swift
/// try database.writeWithoutTransaction { db in
///     try SQLiteBatchWriter(db).write(batch)
/// }
/// ```
struct SQLiteBatchWriter {
    private let connection: SQLiteConnection
    private let begin: SQLiteStatement
    private let commit: SQLiteStatement
    private let rollback: SQLiteStatement
    private let delete: SQLiteStatement
    private let upsert: SQLiteStatement

    /// SQLite's reason a statement failed ("database or disk is full").
    struct Failure: Error {
        var message: String
    }

    init(_ db: Database) throws {
        guard let connection = db.sqliteConnection else { throw Failure(message: "the database is closed") }
        self.connection = connection
        begin = try db.cachedStatement(sql: "BEGIN IMMEDIATE").sqliteStatement
        commit = try db.cachedStatement(sql: "COMMIT").sqliteStatement
        rollback = try db.cachedStatement(sql: "ROLLBACK").sqliteStatement
        delete = try db.cachedStatement(sql: "DELETE FROM promises WHERE sequence = ? AND id = ?").sqliteStatement
        upsert = try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO promises (sequence, id, doc) VALUES (?, ?, ?)").sqliteStatement
    }

    /// Deletions, then upserts, then `COMMIT`; on any failure the transaction
    /// is rolled back, so that none of `batch` is applied.
    func write(_ batch: StoreBatch) throws {
        try run(begin)
        do {
            for deletion in batch.deletions {
                try check(sqlite3_bind_int64(delete, 1, Int64(deletion.sequence)))
                try bindText(delete, 2, deletion.id)
                try run(delete)
            }
            for promise in batch.upserts {
                try check(sqlite3_bind_int64(upsert, 1, Int64(promise.sequence)))
                try bindText(upsert, 2, promise.id)
                try bindText(upsert, 3, promise.serializedJSON())
                try run(upsert)
            }
            try run(commit)
        } catch {
            // A failed COMMIT may already have rolled back (SQLITE_FULL does).
            if sqlite3_get_autocommit(connection) == 0 { try? run(rollback) }
            throw error
        }
    }

    /// Steps `statement` to completion and resets it for the next row.
    private func run(_ statement: SQLiteStatement) throws {
        let code = sqlite3_step(statement)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        guard code == SQLITE_DONE else { throw failure() }
    }

    private func bindText(_ statement: SQLiteStatement, _ index: Int32, _ string: String) throws {
        var string = string
        try string.withUTF8 { try bindText(statement, index, UnsafeRawBufferPointer($0)) }
    }

    private func bindText(_ statement: SQLiteStatement, _ index: Int32, _ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try bindText(statement, index, $0) }
    }

    /// Binds UTF-8 text, copied by SQLite (`SQLITE_TRANSIENT`): ids and
    /// documents are short, and the copy lets the caller's buffer go at once.
    private func bindText(_ statement: SQLiteStatement, _ index: Int32, _ buffer: UnsafeRawBufferPointer) throws {
        // An empty buffer may have no address, and a nil text binds NULL.
        guard let text = buffer.baseAddress, !buffer.isEmpty else {
            return try check(sqlite3_bind_text(statement, index, "", 0, transient))
        }
        guard let length = Int32(exactly: buffer.count) else { throw Failure(message: "string or blob too big") }
        try check(sqlite3_bind_text(statement, index, text.assumingMemoryBound(to: CChar.self), length, transient))
    }

    /// A bind that failed (too big, out of memory) would leave NULL in its place.
    private func check(_ code: Int32) throws {
        guard code == SQLITE_OK else { throw failure() }
    }

    private func failure() -> Failure {
        Failure(message: String(cString: sqlite3_errmsg(connection)))
    }
}

/// SQLite's `SQLITE_TRANSIENT`, a macro Swift does not import: bound bytes
/// are copied before the bind returns.
private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
