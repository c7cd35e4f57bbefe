import Foundation
import PromiseModel
import PromiseRPC
@testable import PromiseSQLiteStore
import PromiseServer
import PromiseStore
import Testing

/// Promise values may be private: the store's files are its owner's alone.
@Suite("SQLitePromiseStore file modes")
struct SQLitePromiseStoreFileModeTests {
    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require(attributes[.posixPermissions] as? NSNumber).intValue
    }

    @Test("the database file and its -wal file are made with mode 0600, and so is -shm when SQLite makes one")
    func newFilesAre0600() throws {
        try withTemporaryDirectory { directory in
            let store = try SQLitePromiseStore(directory: directory)
            try store.commit(StoreBatch(upserts: [StoredPromise(id: "a", sequence: 1, kind: .created, created: 0)]))
            #expect(try mode(store.path) == 0o600)
            #expect(try mode(store.path + "-wal") == 0o600)
            if FileManager.default.fileExists(atPath: store.path + "-shm") {
                #expect(try mode(store.path + "-shm") == 0o600)
            }
        }
    }

    @Test("a store whose files an older daemon left 0644 is tightened to 0600 when it opens")
    func existingFilesAreTightened() throws {
        try withTemporaryDirectory { directory in
            let path: String
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(upserts: [StoredPromise(id: "a", sequence: 1, kind: .created, created: 0)]))
                path = store.path
            }
            let companions = [path, path + "-wal", path + "-shm"]
            for file in companions {
                if !FileManager.default.fileExists(atPath: file) { _ = FileManager.default.createFile(atPath: file, contents: nil) }
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
            }
            let store = try SQLitePromiseStore(directory: directory)
            #expect(try store.load().promises.map(\.id) == ["a"])
            for file in companions where FileManager.default.fileExists(atPath: file) {
                #expect(try mode(file) == 0o600, "\(file)")
            }
        }
    }
}
