import Foundation
import GRDB
import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseSQLiteStore
import PromiseServer
import PromiseStore
import Testing

/// A fresh directory under /tmp for one test, removed when the test ends.
func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
    let directory = "/tmp/sqlite-store-test-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try body(directory)
}

/// A promise that uses every field, with values that stress the document:
/// nested JSON, unicode, an env map, doubles.
private let fullPromise = StoredPromise(
    id: "prömise-✓-日本-🙂", sequence: 7, kind: .then, parentID: "parent \"quoted\"",
    inputIDs: ["in-1", "in-2"], on: .fulfilled, exec: ["/bin/sh", "-c", "echo 'hi'\n"], cwd: "/tmp/dir ü",
    env: ["PATH": "/usr/bin", "GREETING": "héllo=wörld", "EMPTY": ""], policy: .allErrors, name: "build ⚙︎",
    created: 1_700_000_000_123, settled: 1_700_000_001_456, state: .fulfilled,
    value: ["nested": ["array": [1, 2.5, "three", nil, true, ["deep": "ß"]]], "empty": [:], "list": []],
    reason: ["message": "not used but kept", "code": -32603], progress: 0.625, progressMessage: "5/8 done",
    timeoutMilliseconds: 30_000, deadline: 1_700_000_030_123, lease: true, execStarted: true)

/// A promise with only the required fields: every optional is nil, not empty.
private let barePromise = StoredPromise(id: "bare", sequence: 8, kind: .created, created: 1)

@Suite("SQLitePromiseStore")
struct SQLitePromiseStoreTests {
    @Test("every field of a promise, nil or present, comes back as it was committed")
    func roundTripsEveryField() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory)
            try store.commit(StoreBatch(upserts: [fullPromise, barePromise]))
            let loaded = try store.load().promises
            #expect(loaded == [fullPromise, barePromise])
            #expect(loaded.last?.env == nil)
            #expect(loaded.last?.value == nil)
        }
    }

    @Test("ids that differ only in their Unicode spelling are two promises: both load, none is quarantined as stored twice")
    func idsCompareByCodePoints() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory)
            try store.commit(StoreBatch(upserts: [
                StoredPromise(id: "caf\u{E9}", sequence: 1, kind: .created, created: 1),
                StoredPromise(id: "cafe\u{301}", sequence: 2, kind: .created, created: 1),
            ]))
            let contents = try store.load()
            #expect(contents.promises.map { Array($0.id.utf8) } == [Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8)])
            #expect(contents.quarantined.isEmpty)
        }
    }

    @Test("counters keep the largest value committed, across commits, deletions and a reopening")
    func countersNeverGoBack() throws {
        try withTemporaryDirectory { directory in
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(upserts: [barePromise], counters: ["nextSequence": 9, "nextGeneratedID": 4]))
                try store.commit(StoreBatch(deletions: [barePromise.deletion], counters: ["nextSequence": 7]))
                #expect(try store.load().counters == ["nextSequence": 9, "nextGeneratedID": 4])
            }
            let reopened = try SQLitePromiseStore(directory: directory)
            try reopened.commit(StoreBatch(upserts: [barePromise], counters: ["nextGeneratedID": 5]))
            let contents = try reopened.load()
            #expect(contents.counters == ["nextSequence": 9, "nextGeneratedID": 5])
            #expect(contents.promises.map(\.id) == ["bare"])
        }
    }

    @Test("pool limits: the last one set for a pool is kept, in a batch and across commits and a reopening")
    func poolLimitsLastOneWins() throws {
        try withTemporaryDirectory { directory in
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(poolLimits: [
                    StoredPoolLimit(pool: "cc", limit: 4, startLimit: 4),
                    StoredPoolLimit(pool: "gpu", limit: 2, startLimit: nil),
                    StoredPoolLimit(pool: "cc", limit: 1, startLimit: 4),
                ]))
                #expect(try store.load().poolLimits == [
                    StoredPoolLimit(pool: "cc", limit: 1, startLimit: 4),
                    StoredPoolLimit(pool: "gpu", limit: 2, startLimit: nil),
                ])
            }
            let reopened = try SQLitePromiseStore(directory: directory)
            try reopened.commit(StoreBatch(poolLimits: [StoredPoolLimit(pool: "gpu", limit: 0, startLimit: nil)]))
            #expect(try reopened.load().poolLimits == [
                StoredPoolLimit(pool: "cc", limit: 1, startLimit: 4),
                StoredPoolLimit(pool: "gpu", limit: 0, startLimit: nil),
            ])
        }
    }

    @Test("a stored pool limit that is not a number is skipped at load, the others load")
    func unreadablePoolLimitIsSkipped() throws {
        try withTemporaryDirectory { directory in
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(poolLimits: [StoredPoolLimit(pool: "cc", limit: 3, startLimit: nil)]))
            }
            try DatabaseQueue(path: directory + "/promises.sqlite3").write { db in
                try db.execute(sql: "INSERT INTO pool_limits (pool, slots, startSlots) VALUES ('bad', 'many', NULL)")
            }
            let reopened = try SQLitePromiseStore(directory: directory)
            #expect(try reopened.load().poolLimits == [StoredPoolLimit(pool: "cc", limit: 3, startLimit: nil)])
        }
    }

    @Test("load returns promises in ascending sequence, whatever the commit order")
    func loadsInSequenceOrder() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory)
            try store.commit(StoreBatch(upserts: [
                StoredPromise(id: "c", sequence: 30, kind: .created, created: 0),
                StoredPromise(id: "a", sequence: 10, kind: .created, created: 0),
            ]))
            try store.commit(StoreBatch(upserts: [
                StoredPromise(id: "b", sequence: 20, kind: .created, created: 0),
                StoredPromise(id: "z", sequence: 5, kind: .created, created: 0),
            ]))
            #expect(try store.load().promises.map(\.id) == ["z", "a", "b", "c"])
        }
    }

    @Test("an upsert replaces the stored promise with the same id")
    func upsertReplaces() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory)
            var promise = StoredPromise(id: "p", sequence: 1, kind: .created, created: 5)
            try store.commit(StoreBatch(upserts: [promise]))
            promise.state = .fulfilled
            promise.value = ["answer": 42]
            promise.settled = 9
            try store.commit(StoreBatch(upserts: [promise]))
            #expect(try store.load().promises == [promise])
        }
    }

    @Test("deletions remove their promises, run before the batch's upserts, and ignore what matches no row")
    func deletions() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory)
            let promises = (0..<4).map { StoredPromise(id: "p\($0)", sequence: $0, kind: .created, created: 0) }
            try store.commit(StoreBatch(upserts: promises))
            var revived = promises[2]
            revived.state = .cancelled
            try store.commit(StoreBatch(upserts: [revived], deletions: [
                promises[1].deletion, promises[2].deletion, StoreDeletion(id: "never-stored", sequence: 9),
                // A known id under another sequence, and a known sequence under another id.
                StoreDeletion(id: "p0", sequence: 3), StoreDeletion(id: "p9", sequence: 3),
            ]))
            #expect(try store.load().promises == [promises[0], revived, promises[3]])
        }
    }

    @Test("an id removed and made again under a new sequence, in one batch, is stored once, in its new place")
    func idMadeAgain() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory)
            let first = StoredPromise(id: "again", sequence: 1, kind: .created, created: 0)
            let other = StoredPromise(id: "other", sequence: 2, kind: .created, created: 0)
            try store.commit(StoreBatch(upserts: [first, other]))
            let second = StoredPromise(id: "again", sequence: 3, kind: .created, created: 5, state: .fulfilled)
            try store.commit(StoreBatch(upserts: [second], deletions: [first.deletion]))
            #expect(try store.load().promises == [other, second])
        }
    }

    @Test("ids and documents are stored as text, byte for byte, an empty id included, and deletions find them")
    func storesTextByteForByte() throws {
        try withTemporaryDirectory { directory in
            let empty = StoredPromise(id: "", sequence: 1, kind: .created, created: 0)
            let path: String
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(upserts: [empty, fullPromise, barePromise]))
                try store.commit(StoreBatch(deletions: [empty.deletion, fullPromise.deletion]))
                #expect(try store.load().promises == [barePromise])
                try store.commit(StoreBatch(upserts: [empty, fullPromise]))
                path = store.path
            }
            let rows = try DatabaseQueue(path: path).read { db in
                try Row.fetchAll(db, sql: "SELECT id, typeof(id), doc, typeof(doc) FROM promises ORDER BY sequence")
            }
            #expect(rows.map { $0[0] as String } == ["", fullPromise.id, barePromise.id])
            #expect(rows.map { $0[1] as String } == ["text", "text", "text"])
            #expect(rows.map { $0[2] as String } == [empty, fullPromise, barePromise].map {
                String(decoding: $0.serializedJSON(), as: UTF8.self)
            })
            #expect(rows.map { $0[3] as String } == ["text", "text", "text"])
        }
    }

    @Test("a store made by the first schema (rows keyed by id) is upgraded in place, its promises kept in order")
    func upgradesFirstSchema() throws {
        try withTemporaryDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let old = [fullPromise, StoredPromise(id: "a", sequence: 2, kind: .created, created: 0), barePromise]
            do {
                // The v1 layout and GRDB's record of it, as a daemon of that version left them.
                let raw = try DatabaseQueue(path: directory + "/promises.sqlite3")
                try raw.write { db in
                    try db.execute(sql: """
                        CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                        INSERT INTO grdb_migrations VALUES ('v1');
                        CREATE TABLE promises (id TEXT PRIMARY KEY NOT NULL, sequence INTEGER NOT NULL, doc TEXT NOT NULL);
                        CREATE INDEX promises_by_sequence ON promises (sequence);
                        """)
                    for promise in old {
                        try db.execute(
                            sql: "INSERT INTO promises (id, sequence, doc) VALUES (?, ?, ?)",
                            arguments: [promise.id, promise.sequence, String(decoding: promise.serializedJSON(), as: UTF8.self)])
                    }
                }
            }
            let store = try SQLitePromiseStore(directory: directory)
            #expect(try store.load().promises == [old[1], fullPromise, barePromise])
            try store.commit(StoreBatch(
                upserts: [StoredPromise(id: "new", sequence: 9, kind: .created, created: 0)], deletions: [old[1].deletion]))
            #expect(try store.load().promises.map(\.id) == [fullPromise.id, barePromise.id, "new"])
            #expect(try store.pragma("index_list('promises')") == nil)
        }
    }

    @Test("a batch that fails midway (disk full) throws SQLite's reason and applies nothing")
    func failedBatchAppliesNothing() throws {
        try withTemporaryDirectory { directory in
            // 16 pages of 4 KiB hold the schema and a few small rows, not 200 KiB.
            let store = try SQLitePromiseStore(directory: directory, maxPageCount: 16)
            let before = (0..<3).map { StoredPromise(id: "keep\($0)", sequence: $0, kind: .created, created: 0) }
            try store.commit(StoreBatch(upserts: before))

            var changed = before[0]
            changed.state = .rejected
            let bulky = (0..<100).map {
                StoredPromise(
                    id: "bulky\($0)", sequence: 100 + $0, kind: .created, created: 0,
                    value: .string(String(repeating: "x", count: 2_000)))
            }
            let batch = StoreBatch(upserts: [changed] + bulky, deletions: [before[1].deletion])
            let error = try #require(throws: PromiseStoreError.self) { try store.commit(batch) }
            #expect(error.message.contains("full"))
            #expect(error.message.contains(store.path))
            #expect(try store.load().promises == before)

            // The failure leaves the store usable for what fits.
            try store.commit(StoreBatch(deletions: [before[1].deletion]))
            #expect(try store.load().promises.map(\.id) == ["keep0", "keep2"])
        }
    }

    @Test("a store reopened after its first one closed sees every committed batch")
    func reopenSeesCommittedData() throws {
        try withTemporaryDirectory { directory in
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(upserts: [fullPromise]))
                try store.commit(StoreBatch(upserts: [barePromise]))
            }
            let reopened = try SQLitePromiseStore(directory: directory)
            #expect(try reopened.load().promises == [fullPromise, barePromise])
        }
    }

    @Test("a second store on the same directory fails to open while the first is open, naming the holder")
    func secondStoreIsLockedOut() throws {
        try withTemporaryDirectory { directory in
            let first = try SQLitePromiseStore(directory: directory, socketPath: "/run/p.sock")
            try first.commit(StoreBatch(upserts: [barePromise]))
            let error = try #require(throws: PromiseStoreError.self) { try SQLitePromiseStore(directory: directory) }
            #expect(error.message == "the store \(directory) is in use by another daemon (pid \(getpid()), socket "
                        + "/run/p.sock); one store serves one daemon: stop that one first, or give this one another --store")
            #expect(try first.load().promises == [barePromise])
        }
    }

    @Test("a lock that a forked child still shares for a moment after the store closed does not keep the store shut")
    func lockHeldForAMomentIsWaitedFor() throws {
        try withTemporaryDirectory { directory in
            do { _ = try SQLitePromiseStore(directory: directory) }
            // Another open file description of the lock file, locked as a
            // child between fork and exec holds the closed store's lock.
            let other = open(directory + "/promised.lock", O_RDWR | O_CLOEXEC)
            try #require(other >= 0 && flock(other, LOCK_EX | LOCK_NB) == 0)
            let release = Thread { usleep(100_000); close(other) }
            release.start()
            let reopened = try SQLitePromiseStore(directory: directory)
            #expect(try reopened.load().promises == [])
        }
    }

    @Test("the connection fsyncs every commit: WAL with synchronous FULL")
    func durabilitySettings() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory)
            #expect(try store.pragma("journal_mode") == "wal")
            #expect(try store.pragma("synchronous") == "2")  // FULL
        }
    }

    @Test("a missing directory is created, parents included, readable by its owner only")
    func createsDirectory() throws {
        try withTemporaryDirectory { directory in
            let nested = directory + "/a/b"
            let store = try SQLitePromiseStore(directory: nested)
            #expect(store.location == "sqlite:" + nested + "/promises.sqlite3")
            let attributes = try FileManager.default.attributesOfItem(atPath: nested)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
            #expect(FileManager.default.fileExists(atPath: nested + "/promises.sqlite3"))
        }
    }

    @Test("a directory that cannot be created fails the opening with its path")
    func uncreatableDirectory() throws {
        try withTemporaryDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: directory + "/file", contents: Data("x".utf8)))
            let error = try #require(throws: PromiseStoreError.self) {
                try SQLitePromiseStore(directory: directory + "/file/store")
            }
            #expect(error.message == "cannot inspect the store folder \(directory)/file/store: Not a directory")
        }
    }

    @Test("a file that is not a database fails the opening with its path and SQLite's reason")
    func notADatabase() throws {
        try withTemporaryDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let path = directory + "/promises.sqlite3"
            let garbage = Data(String(repeating: "this is not SQLite. ", count: 300).utf8)
            #expect(FileManager.default.createFile(atPath: path, contents: garbage))
            let error = try #require(throws: PromiseStoreError.self) { try SQLitePromiseStore(directory: directory) }
            #expect(error.message.contains(path))
            #expect(error.message.contains("not a database"))
        }
    }
}

@Suite("SQLitePromiseStore.defaultDirectory")
struct SQLitePromiseStoreDefaultDirectoryTests {
    @Test("an absolute XDG_STATE_HOME wins over HOME")
    func xdgStateHome() {
        let directory = SQLitePromiseStore.defaultDirectory(environment: ["XDG_STATE_HOME": "/var/st", "HOME": "/h"])
        #expect(directory == "/var/st/promised")
    }

    @Test("a relative or empty XDG_STATE_HOME is ignored, as the XDG spec says", arguments: ["relative/state", ""])
    func relativeXDGStateHome(value: String) {
        let directory = SQLitePromiseStore.defaultDirectory(environment: ["XDG_STATE_HOME": value, "HOME": "/home/ada"])
        #expect(directory == "/home/ada/.local/state/promised")
    }

    @Test("without XDG_STATE_HOME the store goes under HOME")
    func home() {
        #expect(SQLitePromiseStore.defaultDirectory(environment: ["HOME": "/home/ada"])
            == "/home/ada/.local/state/promised")
    }

    @Test("without HOME the password database's home directory is used")
    func passwordDatabase() throws {
        let entry = try #require(getpwuid(getuid()))
        let home = String(cString: try #require(entry.pointee.pw_dir))
        #expect(SQLitePromiseStore.defaultDirectory(environment: [:])
            == (home as NSString).appendingPathComponent(".local/state/promised"))
    }
}
