import GRDB
import GRDBSQLite
import PromiseModel
import PromiseStore

/// Writes one ``StoreBatch`` in one transaction by stepping, through SQLite's
/// C API, statements that GRDB prepared and keeps cached.
///
/// Commits are on the critical path of every durable answer, and GRDB's
/// `write` and `Statement.execute` cost more than SQLite itself: argument
/// arrays boxed per row, statement bookkeeping, and `BEGIN` and `COMMIT`
/// parsed afresh on every call (docs/PERFORMANCE.md). GRDB still opens,
/// configures, migrates and reads the store.
///
/// Made anew for each commit: GRDB finalizes its cached statements when the
/// schema changes, so their handles are not kept across calls.
///
/// ```swift
/// let leftOut = try database.writeWithoutTransaction { db in
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
    private let raiseCounter: SQLiteStatement
    private let setPoolLimit: SQLiteStatement
    private let deleteLog: SQLiteStatement
    private let upsertLog: SQLiteStatement

    /// SQLite's reason a statement failed ("database or disk is full"), and
    /// its result code.
    struct Failure: Error {
        var code: Int32
        var message: String

        /// True when the failure says something about the store rather than
        /// about one row — a full disk, an I/O error, a lock, a read-only or
        /// corrupt file, a wrong statement — so that any other row would fail
        /// the same way, and it may pass. False for what one row brings on
        /// itself and will bring on again whenever it is written: too big
        /// (`SQLITE_TOOBIG`), a constraint, a type mismatch, a bad index,
        /// and any code not listed here.
        var isStoreWide: Bool {
            switch code & 0xFF {
            case SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_READONLY,
                SQLITE_CANTOPEN, SQLITE_PROTOCOL, SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_INTERRUPT,
                SQLITE_ABORT, SQLITE_PERM, SQLITE_SCHEMA, SQLITE_ERROR, SQLITE_MISUSE:
                true
            default:
                false
            }
        }
    }

    init(_ db: Database) throws {
        guard let connection = db.sqliteConnection else {
            throw Failure(code: SQLITE_MISUSE, message: "the database is closed")
        }
        self.connection = connection
        begin = try db.cachedStatement(sql: "BEGIN IMMEDIATE").sqliteStatement
        commit = try db.cachedStatement(sql: "COMMIT").sqliteStatement
        rollback = try db.cachedStatement(sql: "ROLLBACK").sqliteStatement
        delete = try db.cachedStatement(sql: "DELETE FROM promises WHERE sequence = ? AND id = ?").sqliteStatement
        upsert = try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO promises (sequence, id, doc) VALUES (?, ?, ?)").sqliteStatement
        deleteLog = try db.cachedStatement(sql: "DELETE FROM logs WHERE sequence = ?").sqliteStatement
        upsertLog = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO logs (sequence, id, stdout, stderr, stdoutDropped, stderrDropped)
            VALUES (?, ?, ?, ?, ?, ?)
            """).sqliteStatement
        raiseCounter = try db.cachedStatement(sql: """
            INSERT INTO counters (name, value) VALUES (?, ?)
            ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)
            """).sqliteStatement
        setPoolLimit = try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO pool_limits (pool, slots, startSlots) VALUES (?, ?, ?)").sqliteStatement
    }

    /// Deletions, then upserts, then `COMMIT`, leaving out each change that
    /// fails for a reason of its own (see ``Failure/isStoreWide``), so that
    /// the rest commits together, with one fsync.
    ///
    /// A statement that fails that way is undone by SQLite alone and the
    /// transaction goes on, so leaving a row out costs nothing on the path
    /// where every row fits (no savepoint per row). Should SQLite end the
    /// transaction anyway, the batch is written again from the start without
    /// the rows left out so far.
    ///
    /// - Returns: The changes left out, in batch order (deletions first).
    /// - Throws: ``Failure`` for a store-wide failure, or any failure of
    ///   `BEGIN` or `COMMIT`; the transaction is then rolled back, so that
    ///   none of `batch` is applied.
    func write(_ batch: StoreBatch) throws -> [UnstorableChange] {
        // Keyed by position (deletions, then upserts); empty, and never
        // allocated, while every row fits.
        var leftOut: [Int: UnstorableChange] = [:]
        while true {
            try run(begin)
            do {
                let complete = try apply(batch, leftOut: &leftOut)
                if complete {
                    try writeLogs(batch.logs)
                    try raiseCounters(batch.counters)
                    try setPoolLimits(batch.poolLimits)
                    try run(commit)
                    return leftOut.sorted { $0.key < $1.key }.map(\.value)
                }
            } catch {
                // A failed COMMIT may already have rolled back (SQLITE_FULL does).
                if sqlite3_get_autocommit(connection) == 0 { try? run(rollback) }
                throw error
            }
            // Each pass leaves out one more change, so this ends.
            assert(leftOut.count <= batch.deletions.count + batch.upserts.count)
        }
    }

    /// Runs the changes of `batch` not in `leftOut`, adding to it each that
    /// fails for a reason of its own. Returns false when such a failure
    /// ended the transaction: the batch must then be written again.
    private func apply(_ batch: StoreBatch, leftOut: inout [Int: UnstorableChange]) throws -> Bool {
        for (position, deletion) in batch.deletions.enumerated() where leftOut.isEmpty || leftOut[position] == nil {
            do {
                try check(sqlite3_bind_int64(delete, 1, Int64(deletion.sequence)))
                try bindText(delete, 2, deletion.id)
                try run(delete)
                try check(sqlite3_bind_int64(deleteLog, 1, Int64(deletion.sequence)))
                try run(deleteLog)
            } catch let failure as Failure where !failure.isStoreWide {
                leftOut[position] = UnstorableChange(id: deletion.id, sequence: deletion.sequence, reason: failure.message)
                clear(delete)
                if sqlite3_get_autocommit(connection) != 0 { return false }
            }
        }
        let first = batch.deletions.count
        for (index, promise) in batch.upserts.enumerated() where leftOut.isEmpty || leftOut[first + index] == nil {
            do {
                try check(sqlite3_bind_int64(upsert, 1, Int64(promise.sequence)))
                try bindText(upsert, 2, promise.id)
                try bindText(upsert, 3, promise.serializedJSON())
                try run(upsert)
            } catch let failure as Failure where !failure.isStoreWide {
                leftOut[first + index] = UnstorableChange(id: promise.id, sequence: promise.sequence, reason: failure.message)
                clear(upsert)
                if sqlite3_get_autocommit(connection) != 0 { return false }
            }
        }
        return true
    }

    /// Writes the step logs, after the promises. A log SQLite refuses for a
    /// reason of its own is left out (a log is the step's output, not its
    /// result: the promise and the rest of the batch still commit); a
    /// store-wide failure throws.
    private func writeLogs(_ logs: [StoredStepLog]) throws {
        for log in logs {
            do {
                try check(sqlite3_bind_int64(upsertLog, 1, Int64(log.sequence)))
                try bindText(upsertLog, 2, log.id)
                try bindBlob(upsertLog, 3, log.stdout)
                try bindBlob(upsertLog, 4, log.stderr)
                try check(sqlite3_bind_int64(upsertLog, 5, Int64(log.stdoutDropped)))
                try check(sqlite3_bind_int64(upsertLog, 6, Int64(log.stderrDropped)))
                try run(upsertLog)
            } catch let failure as Failure where !failure.isStoreWide && sqlite3_get_autocommit(connection) == 0 {
                clear(upsertLog)
            }
        }
    }

    /// Binds bytes as a BLOB, copied by SQLite.
    private func bindBlob(_ statement: SQLiteStatement, _ index: Int32, _ bytes: [UInt8]) throws {
        guard let length = Int32(exactly: bytes.count) else {
            throw Failure(code: SQLITE_TOOBIG, message: "string or blob too big")
        }
        // An empty buffer may have no address, and a nil blob binds NULL.
        guard !bytes.isEmpty else { return try check(sqlite3_bind_zeroblob(statement, index, 0)) }
        try bytes.withUnsafeBytes { buffer in
            try check(sqlite3_bind_blob(statement, index, buffer.baseAddress, length, transient))
        }
    }

    /// Keeps the largest value of each counter; a failure here is the store's, not a row's.
    private func raiseCounters(_ counters: [String: Int]) throws {
        for (name, value) in counters {
            try bindText(raiseCounter, 1, name)
            try check(sqlite3_bind_int64(raiseCounter, 2, Int64(value)))
            try run(raiseCounter)
        }
    }

    /// Replaces each pool's stored limit, in batch order (the last one set
    /// wins); a failure here is the store's, not a row's.
    private func setPoolLimits(_ limits: [StoredPoolLimit]) throws {
        for limit in limits {
            try bindText(setPoolLimit, 1, limit.pool)
            try check(sqlite3_bind_int64(setPoolLimit, 2, Int64(limit.limit)))
            if let start = limit.startLimit {
                try check(sqlite3_bind_int64(setPoolLimit, 3, Int64(start)))
            } else {
                try check(sqlite3_bind_null(setPoolLimit, 3))
            }
            try run(setPoolLimit)
        }
    }

    /// Drops what a failed bind left bound, so that no row keeps it.
    private func clear(_ statement: SQLiteStatement) {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
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
        guard let length = Int32(exactly: buffer.count) else {
            throw Failure(code: SQLITE_TOOBIG, message: "string or blob too big")
        }
        try check(sqlite3_bind_text(statement, index, text.assumingMemoryBound(to: CChar.self), length, transient))
    }

    /// A bind that failed (too big, out of memory) would leave NULL in its place.
    private func check(_ code: Int32) throws {
        guard code == SQLITE_OK else { throw failure(code) }
    }

    private func failure(_ code: Int32? = nil) -> Failure {
        Failure(code: code ?? sqlite3_extended_errcode(connection), message: String(cString: sqlite3_errmsg(connection)))
    }
}

/// SQLite's `SQLITE_TRANSIENT`, a macro Swift does not import: bound bytes
/// are copied before the bind returns.
private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
