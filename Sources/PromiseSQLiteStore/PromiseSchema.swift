import GRDB

/// The store's tables, one migration per schema version, so that a newer
/// daemon upgrades an older store in place (GRDB records the applied
/// migrations in `grdb_migrations`).
enum PromiseSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // The document is the whole promise; `sequence` is kept apart
            // only to load in creation order without parsing. (Superseded by v2.)
            try db.execute(sql: """
                CREATE TABLE promises (
                    id TEXT PRIMARY KEY NOT NULL,
                    sequence INTEGER NOT NULL,
                    doc TEXT NOT NULL
                );
                CREATE INDEX promises_by_sequence ON promises (sequence);
                """)
        }
        migrator.registerMigration("v2") { db in
            // Rows keyed by sequence instead of by id: a commit's new and
            // recently settled promises then share the table's last pages,
            // where v1's index of ids put each of them on a page of its own
            // (about 34 pages written per commit of 25 changes, now 4).
            try db.execute(sql: """
                CREATE TABLE promises_v2 (
                    sequence INTEGER PRIMARY KEY,
                    id TEXT NOT NULL,
                    doc TEXT NOT NULL
                );
                INSERT INTO promises_v2 (sequence, id, doc) SELECT sequence, id, doc FROM promises;
                DROP TABLE promises;
                ALTER TABLE promises_v2 RENAME TO promises;
                """)
        }
        migrator.registerMigration("v3") { db in
            // Rows that cannot be loaded, moved here by `load()` as they were
            // (docs/DURABILITY.md, "Quarantine"). `id` and `doc` have no type,
            // so that SQLite keeps whatever they held (text, blob, NULL)
            // without converting it; `sequence` is not a key, since a
            // sequence set aside may be given again to a new promise.
            try db.execute(sql: """
                CREATE TABLE quarantine (
                    number INTEGER PRIMARY KEY,
                    sequence INTEGER NOT NULL,
                    id,
                    doc,
                    reason TEXT NOT NULL,
                    quarantined INTEGER NOT NULL
                );
                """)
        }
        migrator.registerMigration("v4") { db in
            // Numbers that never go back (StoreBatch.counters): the largest
            // value committed for each name.
            try db.execute(sql: """
                CREATE TABLE counters (
                    name TEXT PRIMARY KEY NOT NULL,
                    value INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v5") { db in
            // Step logs (StoredStepLog): the last bytes of a step's stdout
            // and stderr, as it wrote them (BLOB: not necessarily UTF-8),
            // keyed by the promise's sequence; a promise's deletion deletes
            // its log in the same transaction.
            try db.execute(sql: """
                CREATE TABLE logs (
                    sequence INTEGER PRIMARY KEY,
                    id TEXT NOT NULL,
                    stdout BLOB NOT NULL,
                    stderr BLOB NOT NULL,
                    stdoutDropped INTEGER NOT NULL,
                    stderrDropped INTEGER NOT NULL
                );
                """)
        }
        migrator.registerMigration("v6") { db in
            // Pool limits set at run time (StoredPoolLimit), one row a pool;
            // `startSlots` is NULL for a pool made at run time.
            try db.execute(sql: """
                CREATE TABLE pool_limits (
                    pool TEXT PRIMARY KEY NOT NULL,
                    slots INTEGER NOT NULL,
                    startSlots INTEGER
                ) WITHOUT ROWID;
                """)
        }
        return migrator
    }
}
