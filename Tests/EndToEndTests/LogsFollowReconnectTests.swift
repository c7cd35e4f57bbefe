import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry
import PromiseServer
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `promisectl logs --follow` across a restart of a durable daemon: it
/// connects again as `watch` does (`--reconnect-timeout`), asks for the log
/// again and prints only what it had not printed (docs/PROTOCOL.md, "Logs").
@Suite("logs --follow across restarts of the daemon", .serialized)
struct LogsFollowReconnectTests {
    enum Restart: String, CaseIterable, CustomTestStringConvertible {
        case sigterm, kill9
        var testDescription: String { rawValue }
    }

    /// A `run` step's script: `count` numbered lines on stdout and on stderr,
    /// one each `pause` seconds, then exit 3 (so the step is rejected).
    private static func numberedLines(_ count: Int, pause: String = "0.05") -> [String] {
        ["sh", "-c", "i=1; while [ $i -le \(count) ]; do echo \"line $i\"; echo \"err $i\" >&2; i=$((i+1)); sleep \(pause); done; exit 3"]
    }

    private static func lines(_ prefix: String, _ range: ClosedRange<Int>) -> String {
        range.map { "\(prefix) \($0)\n" }.joined()
    }

    /// Waits until the daemon serves at least `count` connections besides the one asking.
    private func waitForClients(_ daemon: E2EDurableDaemon, _ count: Int) throws {
        let attached = try E2E.eventually(timeout: .seconds(10)) {
            (try daemon.call("info")["connections"]?.intValue ?? 0) >= count + 1
        }
        #expect(attached, "the clients did not connect")
    }

    @Test("a follower prints every line of a run step once, in order, across a restart, and exits as the step ended",
          arguments: Restart.allCases)
    func everyLineOnceAcrossRestart(_ restart: Restart) throws {
        try E2EDurableDaemon.with { daemon in
            let follower = try daemon.startCtl(["logs", "--follow", "job"])
            let runner = try daemon.startCtl(["run", "job", "--"] + Self.numberedLines(60))
            #expect(E2E.eventually(timeout: .seconds(15)) { follower.stdoutSoFar.contains("line 8\n") },
                    "the follower printed no output: \(follower.stderrSoFar)")

            switch restart {
            case .sigterm: #expect(daemon.terminate() == 0)
            case .kill9: daemon.kill9()
            }
            // The step writes on while nothing listens.
            Thread.sleep(forTimeInterval: 0.3)
            try daemon.start()

            let ran = try runner.finish(timeout: .seconds(30))
            #expect(ran.status == 3, "\(ran)")
            let result = try follower.finish(timeout: .seconds(30))
            #expect(result.status == 1, "rejected, as the step: \(result)")
            #expect(result.stdout == Self.lines("line", 1...60), "\(result)")
            let errLines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("err ") }.map { $0 + "\n" }.joined()
            #expect(errLines == Self.lines("err", 1...60), "\(result)")
            #expect(result.stderr.contains("lost the daemon; reconnecting (for up to 30 s)"), "\(result)")
            #expect(!result.stderr.contains("were cut"), "\(result)")

            // The daemon's log too has each line once: run sent again what the daemon lost going down.
            let kept = try daemon.ctl(["logs", "job"])
            #expect(kept.stdout == Self.lines("line", 1...60), "\(kept)")
            #expect(kept.stderr == Self.lines("err", 1...60), "\(kept)")
        }
    }

    /// Creates "job" with "first\n" in its log and starts `logs --follow job options…`
    /// once it has printed that and is attached.
    private func followerAttached(_ daemon: E2EDurableDaemon, _ options: [String]) throws -> E2ERunningCommand {
        try daemon.call("create", ["id": "job"])
        try daemon.call("log", ["id": "job", "stream": "stdout", "data": "first\n"])
        let follower = try daemon.startCtl(["logs", "--follow", "job"] + options)
        #expect(E2E.eventually(timeout: .seconds(15)) { follower.stdoutSoFar == "first\n" })
        try waitForClients(daemon, 1)
        return follower
    }

    @Test("a follower whose daemon stays away longer than --reconnect-timeout exits 69 and says why")
    func givesUpAfterReconnectTimeout() throws {
        try E2EDurableDaemon.with { daemon in
            let follower = try followerAttached(daemon, ["--reconnect-timeout", "0.5"])
            daemon.kill9()
            let result = try follower.finish(timeout: .seconds(30))
            #expect(result.status == 69, "\(result)")
            #expect(result.stdout == "first\n", "\(result)")
            #expect(result.stderr.contains("lost the daemon; reconnecting (for up to 0.5 s)"), "\(result)")
            #expect(result.stderr.contains("did not come back within"), "\(result)")
        }
    }

    @Test("--reconnect-timeout 0 fails at once when the daemon goes away, even if it comes back at once")
    func reconnectTimeoutZeroFailsAtOnce() throws {
        try E2EDurableDaemon.with { daemon in
            let follower = try followerAttached(daemon, ["--reconnect-timeout", "0"])
            daemon.kill9()
            try daemon.start()
            try daemon.call("log", ["id": "job", "stream": "stdout", "data": "second\n"])
            try daemon.call("resolve", ["id": "job", "value": 1])
            let result = try follower.finish(timeout: .seconds(30))
            #expect(result.status == 69, "\(result)")
            #expect(result.stdout == "first\n", "\(result)")
            #expect(!result.stderr.contains("reconnecting"), "\(result)")
        }
    }

    @Test("--timeout bounds the follow also while the daemon is away: exit 3")
    func timeoutWhileDaemonAway() throws {
        try E2EDurableDaemon.with { daemon in
            try daemon.call("create", ["id": "job"])
            let follower = try daemon.startCtl(["logs", "--follow", "job", "--timeout", "1", "--reconnect-timeout", "60"])
            try waitForClients(daemon, 1)

            daemon.kill9()
            let result = try follower.finish(timeout: .seconds(30))
            #expect(result.status == 3, "\(result)")
            #expect(result.stderr.contains("lost the daemon; reconnecting"), "\(result)")
            #expect(result.stderr.contains("timed out following job"), "\(result)")
        }
    }

    @Test("output cut by the daemon while the follower was away is noted on stderr, the rest printed once")
    func cutWhileAwayIsNoted() throws {
        try E2EDurableDaemon.with(extraArguments: ["--max-log-bytes", "64"]) { daemon in
            try daemon.call("create", ["id": "job"])
            let written = Self.lines("line", 1...40)
            let first = String(written.prefix(21))  // "line 1\n" … "line 3\n"
            try daemon.call("log", ["id": "job", "stream": "stdout", "data": .string(first)])
            let follower = try daemon.startCtl(["logs", "--follow", "job"])
            #expect(E2E.eventually(timeout: .seconds(15)) { follower.stdoutSoFar == first })
            try waitForClients(daemon, 1)

            // Stored: a running step's log is written at most once a second.
            Thread.sleep(forTimeInterval: 1.5)
            // Stopped, the follower cannot reconnect before the log is cut past what it printed.
            kill(follower.pid, SIGSTOP)
            daemon.kill9()
            try daemon.start()
            try daemon.call("log", ["id": "job", "stream": "stdout", "data": .string(String(written.dropFirst(21)))])
            try daemon.call("resolve", ["id": "job", "value": 1])
            kill(follower.pid, SIGCONT)

            let result = try follower.finish(timeout: .seconds(30))
            #expect(result.status == 0, "\(result)")
            let kept = String(written.suffix(64))
            #expect(result.stdout == first + kept, "\(result)")
            let cut = written.utf8.count - 64 - first.utf8.count
            #expect(result.stderr.contains("stdout of job: \(cut) bytes after the first 21 were cut"), "\(result)")
        }
    }

    @Test("without a restart, a step's bytes that are not UTF-8 do not make the follower skip what follows them")
    func invalidUTF8PrintedWhole() throws {
        try E2EDaemon.with { daemon in
            let gate = daemon.socketPath + ".gate"
            defer { try? FileManager.default.removeItem(atPath: gate) }
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            // One byte in the stream, three (U+FFFD) in the text: counts from the text run ahead of the offsets.
            let script = "printf 'a\\377b\\n'; while [ ! -e '\(gate)' ]; do sleep 0.05; done; printf 'cd\\n'"
            try client.call("then", ["id": "p", "childId": "bad", "exec": ["sh", "-c", .string(script)]])
            let follower = try daemon.startCtl("logs", "--follow", "bad")
            try client.call("resolve", ["id": "p", "value": 1])
            #expect(E2E.eventually(timeout: .seconds(10)) { follower.stdoutSoFar == "a\u{FFFD}b\n" })
            _ = FileManager.default.createFile(atPath: gate, contents: nil)
            let result = try follower.finish(timeout: .seconds(20))
            #expect(result.stdout == "a\u{FFFD}b\ncd\n", "\(result)")
            #expect(result.status == 0, "\(result)")
        }
    }
}
