import GRDB

/// The store's tables, one migration per schema version, so that a newer
/// daemon upgrades an older store in place (GRDB records the applied
/// migrations in `grdb_migrations`).
enum PromiseSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // The document is the whole promise; `sequence` is kept apart
            // only to load in creation order without parsing.
            try db.execute(sql: """
                CREATE TABLE promises (
                    id TEXT PRIMARY KEY NOT NULL,
                    sequence INTEGER NOT NULL,
                    doc TEXT NOT NULL
                );
                CREATE INDEX promises_by_sequence ON promises (sequence);
                """)
        }
        return migrator
    }
}
