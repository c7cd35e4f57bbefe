import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseClient
#endif

/// A store that cannot write: the daemon runs under `ulimit -f` (it ignores
/// SIGXFSZ, so writes past the limit fail with EFBIG) and the SQLite WAL grows
/// with every commit until it reaches the limit. Root ignores file modes, so a
/// read-only folder would prove nothing where CI runs as root; a file-size
/// limit binds root too.
@Suite("a store that cannot write")
struct StoreFailureTests {
    /// 2000 blocks of 512 bytes (1 MB): the WAL passes it after some dozens of commits
    /// (some hundreds of changes, as commits are grouped).
    static let limitBlocks = 2000
    static let longName = String(repeating: "n", count: 1000)

    private func isStoreFailure(_ error: RPCError) -> Bool {
        error.code == .internalError && error.message.hasPrefix("the store cannot write")
    }

    @Test("changes past the limit get -32603 \"the store cannot write\", reads keep working, and every acknowledged change survives")
    func fullDisk() throws {
        let daemon = try E2EDurableDaemon()
        defer { daemon.remove() }
        try daemon.start(fileSizeLimitBlocks: Self.limitBlocks)
        let client = try daemon.client(timeout: .seconds(10))

        // Write until the store refuses, 8 promises at a time (so that group
        // commits hold several changes); remember what was acknowledged.
        var created: [String] = []
        var resolved: [String: JSONValue] = [:]
        var failure: RPCError?
        var failedID = ""
        var index = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while failure == nil && index < 5000 && ContinuousClock.now < deadline {
            var sent: [(request: Int, id: String, value: JSONValue?)] = []
            for _ in 0..<8 {
                let id = "f/\(index)"
                sent.append((try client.send("create", ["id": .string(id), "name": .string(Self.longName)]), id, nil))
                if index % 3 == 0 {
                    let value: JSONValue = ["index": .int(index), "pad": .string(Self.longName)]
                    sent.append((try client.send("resolve", ["id": .string(id), "value": value]), id, value))
                }
                index += 1
            }
            for (request, id, value) in sent {
                do {
                    try client.result(for: request)
                    if let value { resolved[id] = value } else { created.append(id) }
                } catch let error as RPCError {
                    if failure == nil {
                        failure = error
                        failedID = value == nil ? "create \(id)" : "resolve \(id)"
                    }
                }
            }
        }
        #expect(Set(resolved.keys).isSubset(of: created), "a resolve was acknowledged for a promise whose create was not")
        let size = (try? FileManager.default.attributesOfItem(atPath: daemon.databasePath + "-wal")[.size]) ?? "?"
        guard let failure else {
            Issue.record("""
                no store failure after \(created.count) creates within the limit of \(Self.limitBlocks) blocks \
                (WAL size \(size)); log: \(daemon.logTail())
                """)
            return
        }
        #expect(isStoreFailure(failure), "\(failedID): \(failure.code.rawValue) \(failure.message) \(failure.data ?? .null)")
        #expect(failure.data?["reason"]?.stringValue?.isEmpty == false, "\(failure.data ?? .null)")
        let location = failure.data?["store"]?.stringValue ?? ""
        #expect(location.hasPrefix("sqlite:") && location.hasSuffix("/promises.sqlite3"), "\(failure.data ?? .null)")
        #expect(created.count >= 10, "the store failed at once, which proves little: \(failure.message)")

        // Later changes are refused at once, whatever they are.
        let pendingID = created.first { resolved[$0] == nil }
        var laterChanges: [(String, [String: JSONValue])] = [
            ("create", ["id": "after/1"]),
            ("then", ["id": .string(created[0]), "childId": "after/child"]),
            ("all", ["ids": .array(created.prefix(2).map { .string($0) }), "id": "after/all"]),
        ]
        if let pendingID {
            laterChanges += [
                ("resolve", ["id": .string(pendingID), "value": 1]),
                ("progress", ["id": .string(pendingID), "progress": 0.5]),
                ("cancel", ["id": .string(pendingID)]),
            ]
        }
        for (method, params) in laterChanges {
            let started = ContinuousClock.now
            let error = #expect(throws: RPCError.self, "\(method) after the failure") { try client.call(method, params) }
            if let error { #expect(isStoreFailure(error), "\(method): \(error.code.rawValue) \(error.message)") }
            #expect(ContinuousClock.now - started < .seconds(1), "\(method) took \(ContinuousClock.now - started)")
        }

        // Reads answer as before.
        let other = try daemon.client()
        for id in created.prefix(20) {
            let record = try E2E.record(other.call("get", ["id": .string(id)]))
            if let value = resolved[id] {
                #expect(record.value == value)
            } else if id == pendingID {
                #expect(record.state == .pending, "\(id) changed although its change was refused: \(record.json)")
            }
        }
        let page = try other.call("list", ["prefix": "f/", "limit": 10])
        #expect(page["promises"]?.arrayValue?.count == 10)
        if let settledID = resolved.keys.first {
            let waited = try E2E.record(other.call("wait", ["id": .string(settledID), "timeoutMs": 1000]))
            #expect(waited.state == .fulfilled)
        }
        let info = try other.call("info")
        #expect(info["store"]?["writable"] == false, "\(info)")
        #expect(info["store"]?["error"]?.stringValue?.isEmpty == false, "\(info)")
        #expect(daemon.isRunning, "the daemon died: \(daemon.logTail())")

        // A batch: reads in it answer, changes in it are refused.
        let batch = try other.batch([.init("get", ["id": .string(created[0])]), .init("create", ["id": "after/batch"])])
        if case .failure(let error) = batch[0] { Issue.record("get in a batch failed: \(error.message)") }
        if case .failure(let error) = batch[1] {
            #expect(isStoreFailure(error), "\(error.message)")
        } else {
            Issue.record("create in a batch was acknowledged although the store cannot write")
        }
        client.close()
        other.close()

        // Without the limit, on the same store: everything acknowledged is there.
        try daemon.restart()
        let after = try daemon.client(timeout: .seconds(30))
        let records = try daemon.allRecords(client: after)
        var missing: [String] = []
        for id in created {
            guard let record = records[id] else {
                missing.append(id)
                continue
            }
            #expect(record.json["name"]?.stringValue == Self.longName)
            if let value = resolved[id] {
                #expect(record.state == .fulfilled && record.value == value, "\(id): \(record.json["state"] ?? .null)")
            }
        }
        #expect(missing.isEmpty, "acknowledged but lost after the restart: \(missing.prefix(20)) (\(missing.count) of \(created.count))")
        for id in ["after/1", "after/child", "after/all", "after/batch"] {
            #expect(records[id] == nil, "\(id) was refused but is in the store")
        }
        let info2 = try after.call("info")
        #expect(info2["store"]?["writable"] == true, "\(info2)")
        try after.call("create", ["id": "after/restart"])
        #expect(try E2E.record(after.call("get", ["id": "after/restart"])).state == .pending)
    }

    @Test("a store directory that cannot be made stops the daemon at start with a clear message")
    func unusableStorePath() throws {
        let daemon = try E2EDurableDaemon(storeSubpath: "file-in-the-way/store")
        defer { daemon.remove() }
        #expect(FileManager.default.createFile(atPath: daemon.directory + "/file-in-the-way", contents: Data("x".utf8)))
        let result = try E2ECommand.run(
            E2EBinaries.promised, ["--socket", daemon.socketPath, "--store", daemon.storeDirectory], timeout: .seconds(5))
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.contains(daemon.storeDirectory) || result.stderr.contains("file-in-the-way"), "\(result)")
    }
}
