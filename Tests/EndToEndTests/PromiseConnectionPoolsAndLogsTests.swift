import Foundation
import Promise
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// The typed forms of `progress`, `pools` (`info`), `pool.set` and `logs`
/// against the real daemon.
@Suite("PromiseConnection: progress, pools and logs")
struct PromiseConnectionPoolsAndLogsTests {
    @Test("reportProgress answers the record with the progress and message; lower values are ignored; unknown ids are typed errors")
    func reportProgress() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("build")
        let half = try await remote.reportProgress("build", 0.5, message: "compiling")
        #expect(half.progress == 0.5)
        #expect(half.progressMessage == "compiling")
        let lower = try remote.calls.reportProgress("build", 0.25).wait(timeout: .seconds(10))
        #expect(lower.progress == 0.5)
        #expect(try daemon.ctl("get", "build", "--json").stdout.contains("\"progress\":0.5"))

        let missing = await #expect(throws: PromiseConnectionError.self) { try await remote.reportProgress("nope", 0.5) }
        #expect(missing?.code == .noSuchPromise)
        try await remote.resolve("build", with: 1)
        let settled = await #expect(throws: PromiseConnectionError.self) { try await remote.reportProgress("build", 0.9) }
        #expect(settled?.code == .alreadySettled)
        #expect(settled?.record?.state == .fulfilled)
    }

    @Test("pools lists every pool sorted by name with its counts; setPool makes and changes one; bad names are invalidParams")
    func pools() async throws {
        let daemon = try E2EDaemon(extraArguments: ["--pool", "cc=2", "--max-running-processes", "8"])
        defer { daemon.stop() }
        let remote = try await PromiseConnection.connect(socketPath: daemon.socketPath)
        defer { remote.close() }
        let before = try await remote.pools()
        #expect(before.map(\.name) == ["cc", "default"])
        #expect(before.map(\.limit) == [2, 8])
        #expect(before.allSatisfy { $0.running == 0 && $0.queued == 0 && $0.holders.isEmpty && $0.waiting.isEmpty })

        let made = try await remote.setPool("link", limit: 1)
        #expect(made.name == "link" && made.limit == 1 && made.running == 0 && made.queued == 0)
        let changed = try remote.calls.setPool("cc", limit: 5).wait(timeout: .seconds(10))
        #expect(changed.limit == 5)
        let after = try remote.calls.pools().wait(timeout: .seconds(10))
        #expect(after.map(\.name) == ["cc", "default", "link"])
        #expect(after.map(\.limit) == [5, 8, 1])

        // A client holding the only slot of "link", and a step waiting behind it.
        let holder = try daemon.client(timeout: .seconds(30))
        defer { holder.close() }
        _ = try holder.call("pool.acquire", ["pool": "link", "id": "mine"])
        try await remote.create("src")
        _ = try await remote.send(.then("src", childID: "linked", exec: ["/bin/cat"], pool: "link"))
        try await remote.resolve("src", with: 1)
        #expect(E2E.eventually(timeout: .seconds(30)) {
            (try? remote.calls.pools().wait(timeout: .seconds(10)).first { $0.name == "link" }?.queued) == 1
        })
        let link = try #require(try await remote.pools().first { $0.name == "link" })
        #expect(link.running == 1)
        guard case .client(_, let id)? = link.holders.first else {
            Issue.record("the holder is not the client: \(link.holders)"); return
        }
        #expect(id == "mine")
        #expect(link.waiting == [.step("linked")])

        let badName = await #expect(throws: PromiseConnectionError.self) { try await remote.setPool("no spaces", limit: 1) }
        #expect(badName?.code == .invalidParams)
        let badLimit = await #expect(throws: PromiseConnectionError.self) { try await remote.setPool("cc", limit: -1) }
        #expect(badLimit?.code == .invalidParams)
    }

    @Test("logs reads a step's stdout and stderr with their counts; a plain promise has empty logs; an unknown id is noSuchPromise")
    func logs() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("src")
        _ = try await remote.send(.then("src", childID: "step", exec: ["/bin/sh", "-c", "printf '{\"n\":1}'; printf 'warn\\n' >&2"]))
        let step = remote.promise("step", as: [String: Int].self)
        try await remote.resolve("src", with: 0)
        #expect(try await step.value == ["n": 1])

        let log = try await remote.logs("step")
        #expect(log.id == "step" && log.state == .fulfilled)
        #expect(log.stdout == #"{"n":1}"#)
        #expect(log.stderr == "warn\n")
        #expect(log.stdoutBytes == 7 && log.stderrBytes == 5)
        #expect(log.stdoutDropped == 0 && log.stderrDropped == 0)
        #expect(log.limit == 65536)

        let plain = try remote.calls.logs("src").wait(timeout: .seconds(10))
        #expect(plain.stdout.isEmpty && plain.stderr.isEmpty && plain.stdoutBytes == 0)
        let missing = await #expect(throws: PromiseConnectionError.self) { try await remote.logs("nope") }
        #expect(missing?.code == .noSuchPromise)
    }
}
