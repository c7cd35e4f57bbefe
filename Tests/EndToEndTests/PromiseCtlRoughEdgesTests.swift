import Foundation
import PromiseRPC
import Testing

/// The rough edges of issue 21 (section 4), each with the built `promised`
/// and `promisectl`: what a user sees and the exit status.
@Suite("promisectl and promised rough edges")
struct PromiseCtlRoughEdgesTests {
    @Test("a value over the line limit exits 64 with the limit and --max-line-bytes named; the promise stays pending")
    func resolveOverLineLimitExits64NamingTheFlag() throws {
        try E2EDaemon.with(extraArguments: ["--max-line-bytes", "4096"]) { daemon in
            _ = try daemon.ctl("create", "big")
            let result = try daemon.ctl("resolve", "big", "-", "--string", stdin: String(repeating: "a", count: 10_000))
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr == """
                promisectl: line too long: more than 4096 bytes (the daemon's maxLineBytes; \
                promised --max-line-bytes sets it) (error -32004)

                """)
            #expect(try daemon.ctl("get", "big").stdout == "pending\n")
        }
    }

    @Test("stdout over maxProcessOutputBytes rejects a run step and a then step alike, naming the limit and its flag")
    func stdoutOverLimitRejectsRunAndThenAlike() throws {
        try E2EDaemon.with { daemon in
            // 1 MiB + 1 bytes: one byte over the default limit.
            let script = "head -c 1048577 /dev/zero | tr '\\0' a"
            let run = try daemon.ctl("run", "by-run", "--", "sh", "-c", script)
            #expect(run.status == 0, "run exits with its command's status")
            let expected: JSONValue = [
                "code": -32004,
                "message": """
                    stdout was larger than 1048576 bytes (the daemon's maxProcessOutputBytes; \
                    promised --max-process-output-bytes sets it); write large output to a file and print its path
                    """,
                "data": ["limit": "maxProcessOutputBytes", "value": 1_048_576, "exitStatus": 0],
            ]
            #expect(run.stderr == "promisectl: rejecting by-run although sh exited 0: " + (expected["message"]?.stringValue ?? "") + "\n")
            _ = try daemon.ctl("create", "p")
            _ = try daemon.ctl("then", "p", "--id", "by-then", "--", "sh", "-c", script)
            _ = try daemon.ctl("resolve", "p", "1")
            let waited = try daemon.ctl("wait", "by-then", "--timeout", "20")
            #expect(waited.status == 1, "\(waited)")
            let client = try daemon.client()
            defer { client.close() }
            for id in ["by-run", "by-then"] {
                let record = try E2E.record(client.call("get", ["id": .string(id)]))
                #expect(record.state == .rejected, "\(id)")
                #expect(record.reason == expected, "\(id)")
            }
        }
    }
}
