import Foundation
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseJSON
import PromiseClient
#endif

/// A `then … exec` step whose stdout passes `--max-process-output-bytes` is
/// killed there and rejected, naming the limit.
@Suite("step output limit")
struct StepOutputLimitTests {
    @Test("a step running yes is killed once its stdout passes the limit and rejected with the limit's reason")
    func endlessOutputIsKilledAndRejected() throws {
        try E2EDaemon.with(extraArguments: ["--max-process-output-bytes", "1000"]) { daemon in
            let pidFile = daemon.directory + "/yes.pid"
            let created = try daemon.ctl("create", "p")
            #expect(created.status == 0)
            #expect(try daemon.ctl("then", "p", "--id", "x", "--", "sh", "-c", "echo $$ > '\(pidFile)'; exec yes").status == 0)
            #expect(try daemon.ctl("resolve", "p", "1").status == 0)
            let waited = try daemon.ctl("wait", "x", "--timeout", "10")
            #expect(waited.status == 1, "\(waited)")
            let pid = try #require(E2E.pid(fromFile: pidFile), "the command did not start")
            defer { kill(pid, SIGKILL) }
            #expect(E2E.eventually(timeout: .seconds(5)) { !E2E.isAlive(pid) }, "yes still runs")
            let client = try daemon.client()
            defer { client.close() }
            let record = try E2E.record(client.call("get", ["id": "x"]))
            #expect(record.state == .rejected)
            #expect(record.reason == RemoteRejection.stdoutTooLarge(limit: 1000).at("x").json)
            #expect(record.reasonMessage?.contains("--max-process-output-bytes") == true)
        }
    }

    @Test("a step writing exactly the limit is fulfilled with its output")
    func outputAtTheLimitFulfils() throws {
        try E2EDaemon.with(extraArguments: ["--max-process-output-bytes", "1000"]) { daemon in
            let created = try daemon.ctl("create", "p")
            #expect(created.status == 0)
            #expect(try daemon.ctl("then", "p", "--id", "x", "--", "sh", "-c", "head -c 1000 /dev/zero | tr '\\0' a").status == 0)
            #expect(try daemon.ctl("resolve", "p", "1").status == 0)
            #expect(try daemon.ctl("wait", "x", "--timeout", "10").status == 0)
            #expect(try daemon.ctl("get", "x").stdout == "fulfilled \"" + String(repeating: "a", count: 1000) + "\"\n")
        }
    }
}
