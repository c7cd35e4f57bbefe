import Foundation
import GRDB
import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseSQLiteStore
import PromiseServer
import PromiseStore
import Testing

/// Rows of combinators that refer to their inputs' values
/// (`valueOfInputs`), beside rows written with their values in full.
@Suite("SQLitePromiseStore value references")
struct SQLitePromiseStoreValueReferencesTests {
    private let big = JSONValue.string(String(repeating: "v", count: 200_000))

    @Test("a row with references comes back as committed, small, beside a row holding its value in full")
    func referencesRoundTrip() throws {
        try withTemporaryDirectory { directory in
            let input = StoredPromise(id: "big", sequence: 1, kind: .created, created: 1, settled: 1,
                                      state: .fulfilled, value: big)
            let full = StoredPromise(id: "full", sequence: 2, kind: .combinator(.all), inputIDs: ["big", "big"], created: 2,
                                     settled: 2, state: .fulfilled, value: [big, big])
            let referring = StoredPromise(id: "refs", sequence: 3, kind: .combinator(.allSettled), inputIDs: ["big", "x"],
                                          created: 3, settled: 3, state: .fulfilled,
                                          value: [nil, ["id": "x", "state": "cancelled"]], valueOfInputs: [0, nil])
            let path: String
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(upserts: [input, full, referring]))
                #expect(try store.load().promises == [input, full, referring])
                path = store.path
            }
            let documentBytes = try DatabaseQueue(path: path).read { db in
                try Int.fetchOne(db, sql: "SELECT length(doc) FROM promises WHERE id = 'refs'")
            }
            #expect(try #require(documentBytes) < 300)
        }
    }

    @Test("a row whose references are not input indexes is quarantined naming the member, and the others load")
    func malformedReferencesAreQuarantined() throws {
        try withTemporaryDirectory { directory in
            let good = StoredPromise(id: "good", sequence: 1, kind: .created, created: 0)
            let path: String
            do {
                let store = try SQLitePromiseStore(directory: directory)
                try store.commit(StoreBatch(upserts: [good]))
                path = store.path
            }
            let rows = [
                (2, "negative", #"{"created":0,"id":"negative","inputs":["good"],"kind":"all","sequence":2,"state":"fulfilled","valueOfInputs":[-1]}"#),
                (3, "text", #"{"created":0,"id":"text","inputs":["good"],"kind":"any","sequence":3,"state":"fulfilled","valueOfInputs":["0"]}"#),
            ]
            try DatabaseQueue(path: path).write { db in
                for (sequence, id, doc) in rows {
                    try db.execute(sql: "INSERT INTO promises (sequence, id, doc) VALUES (?, ?, ?)",
                                   arguments: [sequence, id, doc])
                }
            }
            let contents = try SQLitePromiseStore(directory: directory).load()
            #expect(contents.promises == [good])
            #expect(contents.quarantined.map(\.id) == ["negative", "text"])
            #expect(contents.quarantined.allSatisfy { $0.reason.contains("\"valueOfInputs\"") })
        }
    }
}
