import ArgumentParser
import Testing
@testable import promisectl

/// One duration syntax everywhere: plain seconds, or a number with ms, s,
/// m, h or d, as the daemon's `--retain` takes.
@Suite("promisectl durations")
struct CommandDurationTests {
    @Test("a duration is plain seconds or a number with a unit", arguments: [
        ("90", 90.0), ("2.5", 2.5), ("0", 0), ("500ms", 0.5), ("10s", 10), ("2m", 120), ("1.5h", 5400), ("1d", 86_400),
    ])
    func parses(text: String, seconds: Double) {
        #expect(CommandDuration(argument: text)?.seconds == seconds)
    }

    @Test("anything else is not a duration", arguments: ["", "s", "10x", "ten", "inf", "nan", "0x10", "1e", "10 s", "m5"])
    func refuses(text: String) {
        #expect(CommandDuration(argument: text) == nil)
    }

    @Test("create, wait, logs, run and --reconnect-timeout take units, on both parsers")
    func everyOptionTakesUnits() throws {
        let create = try #require(try PromiseCtl.parseAsRoot(["create", "a", "--timeout", "10s"]) as? PromiseCtl.Create)
        #expect(create.call.timeout == 10)
        let wait = try #require(try PromiseCtl.parseAsRoot(["wait", "a", "--timeout", "2m", "--reconnect-timeout", "500ms"])
            as? PromiseCtl.Wait)
        #expect(wait.call.timeout == 120)
        #expect(wait.call.reconnect.seconds == 0.5)
        let logs = try #require(try PromiseCtl.parseAsRoot(["logs", "a", "--follow", "--timeout", "1h"]) as? PromiseCtl.Logs)
        #expect(logs.timeout?.seconds == 3600)
        let run = try #require(try PromiseCtl.parseAsRoot(["run", "a", "--grace", "250ms", "--", "true"]) as? PromiseCtl.Run)
        #expect(run.call.grace == 0.25)

        let fastCreate = try #require(FastCommandLine.parse(["create", "a", "--timeout", "10s"]) as? PromiseCtl.Create.Call)
        #expect(fastCreate.timeout == 10)
        let fastRun = try #require(FastCommandLine.parse(["run", "a", "--grace", "1m", "--reconnect-timeout", "2s", "--", "true"])
            as? PromiseCtl.Run.Call)
        #expect(fastRun.grace == 60)
        #expect(fastRun.reconnect.seconds == 2)
    }

    @Test("promisectl create --timeout 300ms rejects the promise once it passes; --timeout 10x exits 64")
    func createTimeoutWithUnit() throws {
        try E2EDaemon.with { daemon in
            #expect(try daemon.ctl("create", "t", "--timeout", "300ms").status == 0)
            let waited = try daemon.ctl("wait", "t", "--timeout", "10s")
            #expect(waited.status == 3, "\(waited)")
            let bad = try daemon.ctl("create", "u", "--timeout", "10x")
            #expect(bad.status == 64, "\(bad)")
        }
    }
}
