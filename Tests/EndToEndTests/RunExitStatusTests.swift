import Foundation
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `promisectl run` exits with its command's status only when the promise
/// ended as that status says: a run that could not settle its promise, or
/// whose promise ended otherwise, exits non-zero however well the command did.
@Suite("promisectl run: the exit status says whether the promise settled")
struct RunExitStatusTests {
    @Test("the daemon gone past --reconnect-timeout: run says it could not settle and exits 69, not its command's 0")
    func daemonGoneExits69() throws {
        try E2EDurableDaemon.with { daemon in
            let gate = daemon.directory + "/gate"
            let started = daemon.directory + "/started"
            let runner = try daemon.startCtl([
                "run", "r", "--reconnect-timeout", "0.5", "--",
                "sh", "-c", "echo $$ > \"$1\"; while [ ! -e \"$0\" ]; do sleep 0.02; done; echo 42", gate, started,
            ])
            #expect(E2E.pid(fromFile: started) != nil, "the command did not start")
            daemon.kill9()
            _ = FileManager.default.createFile(atPath: gate, contents: nil)

            let result = try runner.finish(timeout: .seconds(30))
            #expect(result.status == 69, "\(result)")
            #expect(result.stdout == "42\n", "\(result)")
            #expect(result.stderr.contains("promisectl: could not settle r: "), "\(result)")
        }
    }

    @Test("stdout over 1 MiB from a command that exits 0: the promise is rejected and run exits 1")
    func stdoutOverLimitExits1() throws {
        try E2EDaemon.with { daemon in
            let run = try daemon.ctl("run", "big", "--", "sh", "-c", "head -c 2097152 /dev/zero | tr '\\0' x")
            #expect(run.status == 1, "\(run.status) \(run.stderr)")
            #expect(run.stdout.utf8.count == 2_097_152)
            #expect(run.stderr.hasPrefix("promisectl: rejecting big although sh exited 0: stdout was larger than 1048576 bytes"),
                    "\(run.stderr)")
            #expect(try daemon.ctl("get", "big").stdout.hasPrefix("rejected: stdout was larger than 1048576 bytes"))
        }
    }

    @Test("a promise settled by another client while the command runs: run cannot settle it and exits 5")
    func settledMeanwhileExits5() throws {
        try E2EDaemon.with { daemon in
            let gate = daemon.directory + "/gate"
            let started = daemon.directory + "/started"
            let runner = try daemon.startCtl(
                "run", "r", "--", "sh", "-c", "echo $$ > \"$1\"; while [ ! -e \"$0\" ]; do sleep 0.02; done", gate, started)
            #expect(E2E.pid(fromFile: started) != nil, "the command did not start")
            #expect(try daemon.ctl("resolve", "r", "7").status == 0)
            _ = FileManager.default.createFile(atPath: gate, contents: nil)

            let result = try runner.finish(timeout: .seconds(30))
            #expect(result.status == 5, "\(result)")
            #expect(result.stderr.contains("promisectl: could not settle r: "), "\(result)")
            #expect(try daemon.ctl("get", "r").stdout == "fulfilled 7\n")
        }
    }

    @Test("a promise cancelled while its command runs, the command exiting 0 on TERM: run exits 2")
    func cancelledWithCommandExiting0Exits2() throws {
        try E2EDaemon.with { daemon in
            let started = daemon.directory + "/started"
            let runner = try daemon.startCtl(
                "run", "r", "--", "sh", "-c", "trap 'exit 0' TERM; echo $$ > \"$0\"; while :; do sleep 0.02; done", started)
            #expect(E2E.pid(fromFile: started) != nil, "the command did not start")
            #expect(try daemon.ctl("cancel", "r").status == 0)

            let result = try runner.finish(timeout: .seconds(30))
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.hasSuffix("promisectl: r was cancelled; stopped sh\n"), "\(result)")
        }
    }

    @Test("a command that exits 0 and settles its promise: run exits 0; one that exits 3: run exits 3")
    func commandStatusWhenSettled() throws {
        try E2EDaemon.with { daemon throws in
            #expect(try daemon.ctl("run", "ok", "--", "sh", "-c", "echo 1").status == 0)
            #expect(try daemon.ctl("get", "ok").stdout == "fulfilled 1\n")
            #expect(try daemon.ctl("run", "bad", "--", "sh", "-c", "exit 3").status == 3)
            #expect(try daemon.ctl("get", "bad").stdout == "rejected: sh exited with status 3 (code 3)\n")
        }
    }
}
