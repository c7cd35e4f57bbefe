import Foundation
import GRDB
import GRDBSQLite
import Glibc
import PromiseJSON
import PromiseModel
import PromiseStore

/// The daemon's default ``PromiseStore``: one SQLite file, written through
/// GRDB, where every committed batch survives a crash or a power cut.
///
/// The file is `<directory>/promises.sqlite3`, in WAL mode with
/// `synchronous = FULL`, so that each ``commit(_:)`` — one transaction — is
/// fsynced before it returns. Each promise is one row keyed by its sequence
/// (see ``StoreBatch``), with its id and its ``StoredPromise/json`` document.
///
/// The file and its `-wal` and `-shm` companions are readable by their owner
/// only (mode 0600): promise values may be private. A store left by an
/// older daemon with wider modes is tightened when it opens.
///
/// A row that cannot be loaded is moved to the `quarantine` table rather
/// than stopping the daemon (``load()``); a change that SQLite refuses for
/// good, such as a row past its size limit, is left out of its commit and
/// returned, and the rest commits (``commit(_:)``).
///
/// The folder and its files are checked before they are trusted
/// (``StoreFolder``: a store another user can write to could make the daemon
/// run their commands). While it is open the store holds a lock of its own
/// on `promised.lock` (``StoreLock``) and SQLite's exclusive lock, so a
/// second daemon pointed at the same directory fails to open it, naming the
/// pid and socket of the daemon that has it, instead of taking over the
/// first one's promises and steps. The kernel drops both locks when the
/// process dies, even by `kill -9`.
///
/// ```swift
/// let store = try SQLitePromiseStore(directory: SQLitePromiseStore.defaultDirectory())
/// try store.commit(StoreBatch(upserts: [StoredPromise(id: "a", sequence: 0, kind: "created", created: 0)]))
/// try store.load().promises.map(\.id)   // ["a"]
/// ```
public final class SQLitePromiseStore: PromiseStore {
    /// The database file's path.
    public let path: String
    private let database: DatabaseQueue
    /// Held for the store's life: one store, one daemon.
    private let lock: StoreLock

    /// Opens (creating if needed) the store in `directory`.
    ///
    /// - Parameters:
    ///   - directory: Created with mode 0700 (and its parents) when missing:
    ///     promise values may be private. An existing one must belong to this
    ///     user, be writable by no one else and not be a symbolic link
    ///     (``StoreFolder``).
    ///   - socketPath: The socket of the daemon opening it, written with its
    ///     pid into the lock file so that a second daemon on this store can
    ///     say which one holds it.
    ///   - maxPageCount: Caps the file at this many pages (4 KiB each) so that
    ///     tests can make commits fail as on a full disk; nil in production.
    ///   - maxLength: Lowers SQLite's limit on the bytes of one string
    ///     (`SQLITE_LIMIT_LENGTH`, 1 GB by default) so that tests can make a
    ///     row too big to store; nil in production.
    /// - Throws: ``PromiseStoreError`` naming the path and the reason (held by
    ///   another daemon, another user's folder, not a database, read-only…).
    public init(directory: String, socketPath: String? = nil, maxPageCount: Int? = nil, maxLength: Int32? = nil) throws {
        path = (directory as NSString).appendingPathComponent("promises.sqlite3")
        try StoreFolder.prepare(directory)
        lock = try StoreLock(directory: directory, socketPath: socketPath)
        for file in [path, path + "-wal", path + "-shm", path + "-journal"] {
            try StoreFolder.checkFile(file)
        }
        var configuration = Configuration()
        configuration.journalMode = .wal
        // Only another daemon or an inspecting `sqlite3` shell can hold the
        // lock; wait briefly for the latter, then say the store is busy.
        configuration.busyMode = .timeout(1)
        configuration.label = "PromiseSQLiteStore"
        configuration.prepareDatabase { db in
            if let maxPageCount { try db.execute(sql: "PRAGMA max_page_count = \(maxPageCount)") }
            if let maxLength { sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, maxLength) }
        }
        do {
            // Before SQLite opens it: SQLite makes the file 0644, and the WAL
            // and shared-memory files take the database file's mode.
            try Self.restrictModes(path)
            database = try DatabaseQueue(path: path, configuration: configuration)
            try database.writeWithoutTransaction { db in
                // GRDB's WAL set-up lowers synchronous to NORMAL, which can lose
                // the last commits on power loss; acknowledged changes must not.
                try db.execute(sql: "PRAGMA synchronous = FULL")
                try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            }
            try PromiseSchema.migrator.migrate(database)
            // The migrator may only have read; a write takes the exclusive
            // lock now, so that a second daemon fails here, not mid-serve.
            try database.writeWithoutTransaction { db in try db.execute(sql: "BEGIN EXCLUSIVE; COMMIT") }
            try Self.restrictModes(path)
        } catch let error as PromiseStoreError {
            throw error
        } catch {
            throw PromiseStoreError("cannot open the promise store \(path): \(Self.reason(error))")
        }
    }

    public var location: String { "sqlite:" + path }

    /// Every stored promise, in ascending ``StoredPromise/sequence``, and the
    /// quarantined ones.
    ///
    /// A row that cannot be loaded — its document is not JSON (nested past
    /// the parser's 512 levels, say) or not a promise, it names another id,
    /// or its id was loaded already from an earlier row — is moved, as it is,
    /// from `promises` to `quarantine` with the reason and the time, in one
    /// transaction, so that the daemon starts without it and it can be
    /// inspected (docs/DURABILITY.md, "Quarantine").
    ///
    /// - Throws: ``PromiseStoreError`` when the store cannot be read, or a
    ///   row cannot be moved.
    public func load() throws -> StoreContents {
        do {
            return try database.writeWithoutTransaction { db in
                var promises: [StoredPromise] = []
                var unreadable: [(sequence: Int64, reason: String)] = []
                var loaded: [PromiseKey: Int64] = [:]  // By bytes: two spellings are two ids.
                let rows = try Row.fetchCursor(db, sql: "SELECT sequence, id, doc FROM promises ORDER BY sequence")
                while let row = try rows.next() {
                    let sequence: Int64 = row[0]
                    // Not `row[1] as String`: GRDB traps on a value it cannot convert.
                    let id = Self.text(row[1])
                    // Rows are keyed by sequence, so only this check keeps an id to one promise.
                    if let first = loaded[PromiseKey(id)] {
                        unreadable.append((sequence, "stored twice: the promise under sequence \(first) was loaded"))
                        continue
                    }
                    do throws(PromiseStoreError) {
                        promises.append(try Self.promise(id: id, doc: row[2]))
                        loaded[PromiseKey(id)] = sequence
                    } catch {
                        unreadable.append((sequence, error.message))
                    }
                }
                if !unreadable.isEmpty { try Self.quarantine(unreadable, db) }
                let quarantined = try Row.fetchAll(
                    db, sql: "SELECT id, sequence, reason, quarantined FROM quarantine ORDER BY number")
                var counters: [String: Int] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT name, value FROM counters") {
                    counters[Self.text(row[0])] = row[1]
                }
                let logs = try Self.logs(of: loaded, db)
                let poolLimits = try Row.fetchAll(db, sql: "SELECT pool, slots, startSlots FROM pool_limits ORDER BY pool")
                    .compactMap { row -> StoredPoolLimit? in
                        // A row whose slots are not a number is skipped: the pool keeps its start limit.
                        guard let limit = Int.fromDatabaseValue(row[1]) else { return nil }
                        return StoredPoolLimit(pool: Self.text(row[0]), limit: limit,
                                               startLimit: Int.fromDatabaseValue(row[2]))
                    }
                return StoreContents(promises: promises, quarantined: quarantined.map { row in
                    QuarantinedPromise(id: Self.text(row[0]), sequence: row[1], reason: row[2], time: row[3])
                }, counters: counters, logs: logs, poolLimits: poolLimits)
            }
        } catch {
            throw PromiseStoreError("cannot read the promise store \(path): \(Self.reason(error))")
        }
    }

    /// Moves the rows with these sequences from `promises` to `quarantine`,
    /// byte for byte (`INSERT … SELECT` copies the values as stored).
    private static func quarantine(_ rows: [(sequence: Int64, reason: String)], _ db: Database) throws {
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        try db.inTransaction(.immediate) {
            for (sequence, reason) in rows {
                try db.execute(
                    sql: """
                        INSERT INTO quarantine (sequence, id, doc, reason, quarantined)
                        SELECT sequence, id, doc, ?, ? FROM promises WHERE sequence = ?
                        """,
                    arguments: [reason, now, sequence])
                try db.execute(sql: "DELETE FROM promises WHERE sequence = ?", arguments: [sequence])
            }
            return .commit
        }
    }

    /// The step logs of the promises loaded (by id, with their sequence).
    /// Logs of promises no longer stored (quarantined, or refused when the
    /// log was not) are deleted, so that they do not outlive their promise.
    private static func logs(of loaded: [PromiseKey: Int64], _ db: Database) throws -> [StoredStepLog] {
        var logs: [StoredStepLog] = []
        var orphans: [Int64] = []
        let rows = try Row.fetchCursor(
            db, sql: "SELECT sequence, id, stdout, stderr, stdoutDropped, stderrDropped FROM logs ORDER BY sequence")
        while let row = try rows.next() {
            let sequence: Int64 = row[0]
            let id = text(row[1])
            guard loaded[PromiseKey(id)] == sequence else {
                orphans.append(sequence)
                continue
            }
            logs.append(StoredStepLog(
                id: id, sequence: Int(sequence), stdout: bytes(row[2]), stderr: bytes(row[3]),
                stdoutDropped: Int.fromDatabaseValue(row[4]) ?? 0, stderrDropped: Int.fromDatabaseValue(row[5]) ?? 0))
        }
        if !orphans.isEmpty {
            try db.inTransaction(.immediate) {
                for sequence in orphans { try db.execute(sql: "DELETE FROM logs WHERE sequence = ?", arguments: [sequence]) }
                return .commit
            }
        }
        return logs
    }

    /// A column that should hold bytes, as bytes whatever it holds.
    private static func bytes(_ value: DatabaseValue) -> [UInt8] {
        switch value.storage {
        case .blob(let data): Array(data)
        case .string(let string): Array(string.utf8)
        default: []
        }
    }

    /// A column that should hold text, as text whatever it holds.
    private static func text(_ value: DatabaseValue) -> String {
        String.fromDatabaseValue(value) ?? value.description
    }

    /// Applies `batch` in one transaction — deletions, then upserts — and
    /// returns once it is on disk. A change SQLite refuses for a reason of
    /// its own (too big, a constraint) is left out and returned; the others
    /// commit.
    ///
    /// - Returns: The changes left out, with SQLite's reason ("string or blob too big").
    /// - Throws: ``PromiseStoreError`` with SQLite's reason ("database or disk
    ///   is full", "attempt to write a readonly database"…); then nothing of
    ///   `batch` was applied.
    @discardableResult
    public func commit(_ batch: StoreBatch) throws -> [UnstorableChange] {
        guard !batch.isEmpty else { return [] }
        do {
            return try database.writeWithoutTransaction { db in try SQLiteBatchWriter(db).write(batch) }
        } catch {
            throw PromiseStoreError("cannot write to the promise store \(path): \(Self.reason(error))")
        }
    }

    /// One row as a promise, or why it is not one.
    private static func promise(id: String, doc: DatabaseValue) throws(PromiseStoreError) -> StoredPromise {
        let text: String
        switch doc.storage {
        case .string(let string): text = string
        case .blob(let data): text = String(decoding: data, as: UTF8.self)
        default: throw PromiseStoreError("no JSON document")
        }
        let json: JSONValue
        do {
            json = try JSONValue(parsing: text)
        } catch {
            throw PromiseStoreError("not valid JSON: \(error)")
        }
        let promise: StoredPromise
        do {
            promise = try StoredPromise(json: json)
        } catch {
            throw PromiseStoreError("unreadable: \(error.message)")
        }
        guard promise.id == id else { throw PromiseStoreError("holds the document of \"\(promise.id)\"") }
        return promise
    }

    /// Creates the database file with mode 0600 when it is missing, and sets
    /// 0600 on it and on its `-wal` and `-shm` files when they exist.
    private static func restrictModes(_ path: String) throws {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw modeError(path) }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0 else { throw modeError(path) }
        for companion in [path + "-wal", path + "-shm"] where chmod(companion, 0o600) != 0 && errno != ENOENT {
            throw modeError(companion)
        }
    }

    private static func modeError(_ path: String) -> PromiseStoreError {
        PromiseStoreError("cannot open the promise store \(path): \(String(cString: strerror(errno)))")
    }

    /// A pragma's value on the store's own connection, for tests: per-connection
    /// settings such as `synchronous` cannot be seen from another connection.
    func pragma(_ name: String) throws -> String? {
        try database.read { db in try String.fetchOne(db, sql: "PRAGMA \(name)") }
    }

    /// SQLite's own words ("database or disk is full") rather than GRDB's
    /// description, which repeats the SQL statement and its arguments.
    private static func reason(_ error: any Error) -> String {
        if let error = error as? PromiseStoreError {
            return error.message
        }
        if let error = error as? SQLiteBatchWriter.Failure {
            return error.message
        }
        if let error = error as? DatabaseError {
            return error.message ?? "SQLite error \(error.resultCode.rawValue)"
        }
        if let error = error as? CocoaError, let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError {
            return underlying.localizedDescription
        }
        return (error as NSError).localizedDescription
    }
}
