import Foundation
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseJSON
import PromiseClient
#endif

/// Plain `wait` ended by Ctrl-C: the daemon's steps run on, and a person is
/// told so, with the command that stops them.
@Suite("promisectl wait: Ctrl-C without --cancel-on-signal")
struct WaitInterruptNoteTests {
    @Test("SIGINT to a wait on a terminal names what still runs and the root to cancel, dies by SIGINT, and cancels nothing")
    func interruptNamesTheRoot() throws {
        try E2EDaemon.with { daemon in
            for line in [
                ["create", "build/src"],
                ["then", "build/src", "--id", "build/cc/a", "--", "sleep", "30"],
                ["then", "build/src", "--id", "build/cc/b", "--", "sleep", "30"],
                ["all", "build/cc/a", "build/cc/b", "--id", "build/objs"],
                ["then", "build/objs", "--id", "build/link", "--", "true"],
                ["resolve", "build/src", "1"],
            ] {
                let result = try daemon.ctl(line)
                try #require(result.status == 0, "\(line): \(result)")
            }
            let client = try daemon.client()
            defer {
                _ = try? client.call("cancel", ["id": "build/src"])
                client.close()
            }
            let waiter = try daemon.startCtl(["wait", "build/link"], environment: ["PROMISECTL_TTY": "1"])
            #expect(E2E.eventually(timeout: .seconds(10)) { (try? client.call("info"))?["connections"]?.intValue == 2 })
            Thread.sleep(forTimeInterval: 0.2)  // its wait request sent
            kill(waiter.pid, SIGINT)
            let result = try waiter.finish(timeout: .seconds(10))
            #expect(result.status == 128 + SIGINT, "died by SIGINT, as before: \(result)")
            #expect(result.stderr == "promisectl: interrupted: build/link still runs; promisectl cancel build/src stops it\n")
            #expect(try client.call("get", ["id": "build/cc/a"])["state"] == "pending", "nothing was cancelled")
        }
    }

    @Test("piped stderr (not a terminal): SIGINT ends the wait without a word, as a signal does")
    func pipedStaysQuiet() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "p")
            let client = try daemon.client()
            defer { client.close() }
            // Spawned with SIGINT unblocked and at its default, as a shell starts it; stderr to a file.
            let log = daemon.directory + "/wait.log"
            let waiter = try E2ESpawnedProcess(E2EBinaries.promisectl, ["wait", "p", "--socket", daemon.socketPath], logPath: log)
            defer { if waiter.isRunning { kill(waiter.pid, SIGKILL) } }
            #expect(E2E.eventually(timeout: .seconds(10)) { (try? client.call("info"))?["connections"]?.intValue == 2 })
            Thread.sleep(forTimeInterval: 0.2)
            kill(waiter.pid, SIGINT)
            #expect(E2E.eventually(timeout: .seconds(10)) { !waiter.isRunning })
            #expect(waiter.terminationStatus == 128 + SIGINT)
            #expect((try? String(contentsOfFile: log, encoding: .utf8)) == "", "no note: stderr is not a terminal")
        }
    }
}
