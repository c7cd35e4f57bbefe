import Foundation
import Promise
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// The rest of the protocol through typed requests: combinators, `then`
/// with a command, `list` pages, `forget`, `cancelPrefix`.
@Suite("PromiseConnection: typed requests of the whole protocol")
struct PromiseConnectionProtocolTests {
    @Test("all, any, race and allSettled make typed records that settle from their inputs")
    func combinators() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        for id in ["a", "b", "c"] { try await remote.create(id) }
        let all = try await remote.send(.all(["a", "b"], policy: .allErrors, id: "all"))
        #expect(all.kind == "all" && all.state == .pending)
        #expect(all.json["inputs"] == ["a", "b"])
        let any = try await remote.send(.any(["b", "c"], id: "any"))
        let race = try await remote.send(.race(["a", "c"], id: "race"))
        let settled = try await remote.send(.allSettled(["a", "b"]))
        #expect(race.kind == "race" && any.kind == "any")
        #expect(settled.id.hasPrefix("p"))

        try await remote.resolve("a", with: 1)
        try await remote.reject("b", message: "no")
        #expect(try await remote.wait("race").value == 1)
        let allRecord = try await remote.wait("all")
        #expect(allRecord.state == .rejected)
        #expect(allRecord.reason?.message == "1 of 2 input promises were rejected")
        #expect(try await remote.get("any").state == .pending)
        try await remote.resolve("c", with: 3)
        #expect(try await remote.wait(any.id).value == 3)
        let entries = try await remote.wait(settled.id).value(as: [JSONValue].self)
        #expect(entries.map { $0["state"] } == ["fulfilled", "rejected"])

        let taken = await #expect(throws: PromiseConnectionError.self) { try await remote.send(.race(["a"], id: "race")) }
        #expect(taken?.code == .exists)
        let unknown = await #expect(throws: PromiseConnectionError.self) { try await remote.send(.all(["nope"])) }
        #expect(unknown?.code == .noSuchPromise)
    }

    @Test("then with exec runs the command on the parent's value, and its mirror reads the output typed")
    func thenExec() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("src")
        let child = try await remote.send(.then("src", childID: "copy", exec: ["/bin/cat"], cwd: "/tmp"))
        #expect(child.parent == "src")
        #expect(child.json["exec"] == ["/bin/cat"])
        let copied = remote.promise("copy", as: [String: Int].self)
        try await remote.resolve("src", with: ["files": 21])
        #expect(try await copied.value == ["files": 21])
        let record = try await remote.get("copy")
        #expect(record.exitStatus == 0)

        let onFailure = try remote.calls.send(.then("src", childID: "cleanup", on: .rejected)).wait(timeout: .seconds(10))
        #expect(onFailure.json["on"] == "rejected")
    }

    @Test("list pages follow their cursor to the end; forget and cancelPrefix answer what they did")
    func listForgetCancelPrefix() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        for index in 0..<5 { try await remote.create("job/\(index)") }
        try await remote.create("other")
        try await remote.resolve("job/0", with: 0)

        var ids: [String] = []
        var page = try await remote.send(.list(prefix: "job/", limit: 2))
        ids += page.records.map(\.id)
        while let cursor = page.cursor {
            page = try await remote.send(.list(prefix: "job/", limit: 2, cursor: cursor))
            ids += page.records.map(\.id)
        }
        #expect(ids == (0..<5).map { "job/\($0)" })
        let pending = try await remote.send(.list(prefix: "job/", state: .pending))
        #expect(pending.records.count == 4 && pending.cursor == nil)

        let forgotten = try await remote.send(.forget(["job/0", "job/1"]))
        #expect(forgotten["forgotten"] == 1)
        #expect(forgotten["pending"] == ["job/1"])
        let cancelled = try await remote.send(.cancelPrefix("job/"))
        #expect(cancelled["cancelled"] == 4)
        #expect(try await remote.get("other").state == .pending)
    }
}
