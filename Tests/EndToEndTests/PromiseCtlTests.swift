import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseClient
#endif

/// The built `promisectl` against a real daemon: what it prints and every exit status.
@Suite("promisectl commands and exit statuses")
struct PromiseCtlTests {
    @Test("create prints the id; a taken id exits 5; --if-exists exits 0 with the id")
    func create() throws {
        try E2EDaemon.with { daemon in
            let made = try daemon.ctl("create", "build/lib", "--name", "library", "--timeout", "60")
            #expect(made.status == 0, "\(made)")
            #expect(made.stdout == "build/lib\n")
            let again = try daemon.ctl("create", "build/lib")
            #expect(again.status == 5, "\(again)")
            #expect(again.stderr.hasPrefix("promisectl: "))
            let tolerant = try daemon.ctl("create", "build/lib", "--if-exists")
            #expect(tolerant.status == 0)
            #expect(tolerant.stdout == "build/lib\n")
            let anonymous = try daemon.ctl("create")
            #expect(anonymous.status == 0)
            #expect(!anonymous.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
        }
    }

    @Test("resolve takes JSON, stdin with -, or text with --string; wait prints the value")
    func resolveForms() throws {
        try E2EDaemon.with { daemon in
            for id in ["j", "s", "t", "n"] { _ = try daemon.ctl("create", id) }
            #expect(try daemon.ctl("resolve", "j", #"{"b":[1,2],"a":null}"#).status == 0)
            #expect(try daemon.ctl("resolve", "s", "-", stdin: "[true, 2.5]\n").status == 0)
            #expect(try daemon.ctl("resolve", "t", "-", "--string", stdin: "two words\n").status == 0)
            #expect(try daemon.ctl("resolve", "n").status == 0)
            #expect(try daemon.ctl("wait", "j").stdout == #"{"a":null,"b":[1,2]}"# + "\n")
            #expect(try daemon.ctl("wait", "s").stdout == "[true,2.5]\n")
            #expect(try daemon.ctl("wait", "t").stdout == "\"two words\"\n")
            #expect(try daemon.ctl("wait", "t", "--raw").stdout == "two words\n")
            #expect(try daemon.ctl("wait", "n").stdout == "null\n")
        }
    }

    @Test("resolve with a VALUE that is not JSON exits 64 and settles nothing")
    func resolveBadJSON() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "a")
            let result = try daemon.ctl("resolve", "a", "not json")
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("--string"))
            #expect(try daemon.ctl("get", "a").stdout == "pending\n")
        }
    }

    @Test("resolving a settled promise exits 5; an unknown id exits 4")
    func resolveErrors() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "a")
            _ = try daemon.ctl("resolve", "a", "1")
            let twice = try daemon.ctl("resolve", "a", "2")
            #expect(twice.status == 5, "\(twice)")
            let missing = try daemon.ctl("resolve", "ghost", "1")
            #expect(missing.status == 4, "\(missing)")
            #expect(missing.stderr.hasPrefix("promisectl: "))
            #expect(missing.stderr.split(separator: "\n").count == 1)
        }
    }

    @Test("reject with --code and --data; wait exits 1 with the reason on stderr; get --json shows it")
    func reject() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "a")
            #expect(try daemon.ctl("reject", "a", "disk full", "--code", "28", "--data", #"{"dev":"sda"}"#).status == 0)
            let waited = try daemon.ctl("wait", "a")
            #expect(waited.status == 1)
            #expect(waited.stdout == "")
            #expect(waited.stderr.contains("disk full"))
            let got = try daemon.ctl("get", "a", "--json")
            #expect(got.status == 1)
            let record = try E2E.record(JSONValue(parsing: got.stdout))
            #expect(record.reasonCode == 28)
            #expect(record.reasonMessage == "disk full")
            #expect(record.reason?["data"] == ["dev": "sda"])
            #expect(try daemon.ctl("get", "a").stdout == "rejected: disk full (code 28)\n")
        }
    }

    @Test("get --raw prints the value alone; pending exits 3 with nothing on stdout; a reason goes to stderr")
    func getRaw() throws {
        try E2EDaemon.with { daemon in
            for id in ["text", "empty", "object", "open", "failed", "stopped"] { _ = try daemon.ctl("create", id) }
            _ = try daemon.ctl("create", "expired", "--timeout", "0.05")
            _ = try daemon.ctl("resolve", "text", "-", "--string", stdin: "1.2.3\n")
            _ = try daemon.ctl("resolve", "empty", #""""#)
            _ = try daemon.ctl("resolve", "object", #"{"b":"x y","a":1}"#)
            _ = try daemon.ctl("reject", "failed", "disk full", "--code", "28")
            _ = try daemon.ctl("cancel", "stopped")

            let text = try daemon.ctl("get", "text", "--raw")
            #expect(text.status == 0 && text.stdout == "1.2.3\n" && text.stderr == "", "\(text)")
            let empty = try daemon.ctl("get", "empty", "--raw")
            #expect(empty.status == 0 && empty.stdout == "\n", "\(empty)")
            let object = try daemon.ctl("get", "object", "--raw")
            #expect(object.status == 0 && object.stdout == #"{"a":1,"b":"x y"}"# + "\n", "\(object)")
            let open = try daemon.ctl("get", "open", "--raw")
            #expect(open.status == 3 && open.stdout == "", "\(open)")
            #expect(open.stderr == "promisectl: open is pending\n", "\(open)")
            let failed = try daemon.ctl("get", "failed", "--raw")
            #expect(failed.status == 1 && failed.stdout == "", "\(failed)")
            #expect(failed.stderr.contains("disk full"), "\(failed)")
            let stopped = try daemon.ctl("get", "stopped", "--raw")
            #expect(stopped.status == 2 && stopped.stdout == "", "\(stopped)")
            #expect(try daemon.ctl("get", "ghost", "--raw").status == 4)
            // Rejected by its own timeout: get's 1, not wait's 3, which --raw keeps for pending.
            #expect(E2E.eventually { (try? daemon.ctl("get", "expired").status) == 1 })
            let expired = try daemon.ctl("get", "expired", "--raw")
            #expect(expired.status == 1 && expired.stdout == "", "\(expired)")
            #expect(expired.stderr.contains("timed out"), "\(expired)")
            let both = try daemon.ctl("get", "text", "--raw", "--json")
            #expect(both.status == 64 && both.stderr.contains("exclude each other"), "\(both)")
        }
    }

    @Test("cancel makes wait and get exit 2")
    func cancel() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "a")
            #expect(try daemon.ctl("cancel", "a").status == 0)
            #expect(try daemon.ctl("wait", "a").status == 2)
            #expect(try daemon.ctl("get", "a").status == 2)
            #expect(try daemon.ctl("cancel", "ghost").status == 4)
        }
    }

    @Test("wait --timeout on a pending promise exits 3 after about that long")
    func waitTimeout() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "a")
            let start = ContinuousClock.now
            let result = try daemon.ctl("wait", "a", "--timeout", "0.2")
            #expect(result.status == 3, "\(result)")
            #expect(ContinuousClock.now - start < .seconds(5))
        }
    }

    @Test("a promise rejected by its own timeout makes wait exit 3")
    func promiseTimeout() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "a", "--timeout", "0.1")
            let result = try daemon.ctl("wait", "a", "--timeout", "5")
            #expect(result.status == 3, "\(result)")
        }
    }

    @Test("wait before create returns once another process creates and resolves the id")
    func waitBeforeCreate() throws {
        try E2EDaemon.with { daemon in
            let waiter = try daemon.startCtl("wait", "meet", "--timeout", "10", "--raw")
            Thread.sleep(forTimeInterval: 0.2)
            _ = try daemon.ctl("create", "meet")
            _ = try daemon.ctl("resolve", "meet", "--string", "hello")
            let result = try waiter.finish()
            #expect(result.status == 0)
            #expect(result.stdout == "hello\n")
        }
    }

    @Test("get prints the state and value, exiting 0 for pending and fulfilled")
    func get() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "a")
            #expect(try daemon.ctl("get", "a").stdout == "pending\n")
            _ = try daemon.ctl("resolve", "a", "[1]")
            let got = try daemon.ctl("get", "a")
            #expect(got.status == 0)
            #expect(got.stdout == "fulfilled [1]\n")
            #expect(try daemon.ctl("get", "ghost").status == 4)
        }
    }

    @Test("then prints the child id; the daemon runs CMD with the parent's value on stdin")
    func then() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "p")
            let child = try daemon.ctl("then", "p", "--id", "p/next", "--", "sh", "-c", "sed 's/1/2/'")
            #expect(child.status == 0, "\(child)")
            #expect(child.stdout == "p/next\n")
            let plain = try daemon.ctl("then", "p", "--id", "p/plain")
            #expect(plain.stdout == "p/plain\n")
            _ = try daemon.ctl("resolve", "p", #"{"n":1}"#)
            #expect(try daemon.ctl("wait", "p/next", "--timeout", "10").stdout == #"{"n":2}"# + "\n")
            #expect(try daemon.ctl("wait", "p/plain", "--timeout", "10").stdout == #"{"n":1}"# + "\n")
        }
    }

    @Test("then --on rejected runs CMD only after a rejection")
    func thenOnRejected() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "p")
            _ = try daemon.ctl("then", "p", "--id", "h", "--on", "rejected", "--", "sh", "-c", "echo 7")
            _ = try daemon.ctl("reject", "p", "failed")
            let result = try daemon.ctl("wait", "h", "--timeout", "10")
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "7\n")
        }
    }

    @Test("run fulfils with CMD's stdout as JSON, passes output through and exits 0")
    func runSuccess() throws {
        try E2EDaemon.with { daemon in
            let result = try daemon.ctl("run", "job", "--", "sh", "-c", #"echo '{"ok":true}'; echo note >&2"#)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "{\"ok\":true}\n")
            #expect(result.stderr == "note\n")
            #expect(try daemon.ctl("wait", "job").stdout == #"{"ok":true}"# + "\n")
        }
    }

    @Test("run fulfils with text output as a string without its trailing newline")
    func runStringOutput() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "job")
            #expect(try daemon.ctl("run", "job", "--", "echo", "hello world").status == 0)
            #expect(try daemon.ctl("wait", "job").stdout == "\"hello world\"\n")
        }
    }

    @Test("run exits with CMD's status and rejects with code = status and message = end of stderr")
    func runFailure() throws {
        try E2EDaemon.with { daemon in
            let result = try daemon.ctl("run", "job", "--", "sh", "-c", "echo partial; echo 'cannot frobnicate' >&2; exit 42")
            #expect(result.status == 42)
            #expect(result.stdout == "partial\n")
            let record = try E2E.record(JSONValue(parsing: try daemon.ctl("get", "job", "--json").stdout))
            #expect(record.state == .rejected)
            #expect(record.reasonCode == 42)
            #expect(record.reasonMessage == "cannot frobnicate")
        }
    }

    @Test("run of a missing program exits 127 and rejects the promise")
    func runMissingProgram() throws {
        try E2EDaemon.with { daemon in
            let result = try daemon.ctl("run", "job", "--", "/nonexistent/tool")
            #expect(result.status == 127, "\(result)")
            #expect(try daemon.ctl("get", "job").status == 1)
        }
    }

    @Test("run on an already settled id exits 5 without running CMD")
    func runOnSettled() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "job")
            _ = try daemon.ctl("resolve", "job", "1")
            let marker = daemon.directory + "/ran"
            let result = try daemon.ctl("run", "job", "--", "touch", marker)
            #expect(result.status == 5)
            #expect(!FileManager.default.fileExists(atPath: marker))
        }
    }

    @Test("cancelling the id stops run's command group (grandchildren too) and run exits with the signal status")
    func runCancelled() throws {
        try E2EDaemon.with { daemon in
            let pidFile = daemon.directory + "/sleep.pid"
            let runner = try daemon.startCtl("run", "job", "--grace", "1", "--", "sh", "-c", "sleep 60 & echo $! > '\(pidFile)'; wait")
            let pid = try #require(E2E.pid(fromFile: pidFile))
            #expect(E2E.isAlive(pid))
            #expect(try daemon.ctl("cancel", "job").status == 0)
            let result = try runner.finish(timeout: .seconds(10))
            #expect(result.status == 128 + SIGTERM, "\(result)")
            #expect(E2E.eventually { !E2E.isAlive(pid) }, "grandchild \(pid) survived")
            #expect(try daemon.ctl("get", "job").status == 2)
        }
    }

    @Test("SIGINT to run is passed on to the command's group; the promise is rejected with 128 + SIGINT")
    func runForwardsSignals() throws {
        try E2EDaemon.with { daemon in
            let pidFile = daemon.directory + "/child.pid"
            let runner = try daemon.startCtl("run", "job", "--", "sh", "-c", "echo $$ > '\(pidFile)'; exec sleep 60")
            let pid = try #require(E2E.pid(fromFile: pidFile))
            kill(runner.pid, SIGINT)
            let result = try runner.finish(timeout: .seconds(10))
            #expect(result.status == 128 + SIGINT, "\(result)")
            #expect(!E2E.isAlive(pid))
            let record = try E2E.record(JSONValue(parsing: try daemon.ctl("get", "job", "--json").stdout))
            #expect(record.state == .rejected)
            #expect(record.reasonCode == Int(128 + SIGINT))
        }
    }

    @Test("when run itself is killed, the promise it created is rejected, not left pending")
    func runKilledLeavesNoPendingPromise() throws {
        try E2EDaemon.with { daemon in
            let pidFile = daemon.directory + "/child.pid"
            let runner = try daemon.startCtl("run", "job", "--", "sh", "-c", "echo $$ > '\(pidFile)'; exec sleep 60")
            let pid = try #require(E2E.pid(fromFile: pidFile))
            kill(runner.pid, SIGKILL)
            #expect(E2E.eventually { (try? daemon.ctl("get", "job").status) == 1 })
            // The orphaned command holds Foundation's exit-watch pipe: end it before reaping promisectl.
            kill(-pid, SIGKILL)
            _ = try? runner.finish(timeout: .seconds(5))
        }
    }

    @Test("a command that ignores TERM is killed after --grace")
    func runCancelledKillsStubborn() throws {
        try E2EDaemon.with { daemon in
            let pidFile = daemon.directory + "/stubborn.pid"
            let runner = try daemon.startCtl(
                "run", "job", "--grace", "0.3", "--", "sh", "-c", "trap '' TERM; echo $$ > '\(pidFile)'; while :; do sleep 0.05; done")
            let pid = try #require(E2E.pid(fromFile: pidFile))
            _ = try daemon.ctl("cancel", "job")
            let result = try runner.finish(timeout: .seconds(10))
            #expect(result.status == 128 + SIGKILL, "\(result)")
            #expect(!E2E.isAlive(pid))
        }
    }

    @Test("watch prints one JSON line per notification and --until-settled ends it")
    func watch() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "a")
            _ = try daemon.ctl("create", "b")
            _ = try daemon.ctl("resolve", "b", "2")
            let watcher = try daemon.startCtl("watch", "a", "b", "--until-settled")
            #expect(E2E.eventually { watcher.stdoutSoFar.contains("\"b\"") })
            _ = try daemon.ctl("progress", "a", "0.5", "halfway")
            _ = try daemon.ctl("resolve", "a", "1")
            let result = try watcher.finish(timeout: .seconds(10))
            #expect(result.status == 0)
            let lines = try result.stdout.split(separator: "\n").map { try JSONValue(parsing: String($0)) }
            #expect(lines.count == 3)
            #expect(lines.map { $0["method"]?.stringValue ?? "" } == ["settled", "progress", "settled"])
            #expect(lines[1]["params"]?["message"] == "halfway")
            #expect(lines[2]["params"]?["value"] == 1)
        }
    }

    @Test("watch without ids is a usage error")
    func watchWithoutIDs() throws {
        try E2EDaemon.with { daemon in
            let result = try daemon.ctl("watch")
            #expect(result.status == 64, "\(result)")
        }
    }

    @Test("list prints id and state per line and follows pages; --json prints records")
    func list() throws {
        try E2EDaemon.with { daemon in
            for i in 0..<3 { _ = try daemon.ctl("create", "job/\(i)") }
            _ = try daemon.ctl("create", "other")
            _ = try daemon.ctl("resolve", "job/2", "1")
            let listed = try daemon.ctl("list", "--prefix", "job/")
            #expect(Set(listed.stdout.split(separator: "\n")) == ["job/0\tpending", "job/1\tpending", "job/2\tfulfilled"])
            let pending = try daemon.ctl("list", "--state", "pending", "--json")
            let ids = try pending.stdout.split(separator: "\n").map { try E2E.record(JSONValue(parsing: String($0))).id }
            #expect(Set(ids) == ["job/0", "job/1", "other"])
            #expect(try daemon.ctl("list", "--limit", "2").stdout.split(separator: "\n").count == 2)
        }
    }

    @Test("info prints the daemon's JSON")
    func info() throws {
        try E2EDaemon.with { daemon in
            let result = try daemon.ctl("info")
            #expect(result.status == 0)
            #expect(try JSONValue(parsing: result.stdout)["protocol"] == 1)
        }
    }

    @Test("progress outside 0…1 exits 64; on an unknown id exits 4")
    func progress() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "a")
            #expect(try daemon.ctl("progress", "a", "0.3").status == 0)
            #expect(try daemon.ctl("progress", "a", "1.3").status == 64)
            #expect(try daemon.ctl("progress", "ghost", "0.3").status == 4)
        }
    }

    @Test("all, any, race and all-settled print the new id and settle as the methods do")
    func combinators() throws {
        try E2EDaemon.with { daemon in
            for id in ["a", "b", "c"] { _ = try daemon.ctl("create", id) }
            #expect(try daemon.ctl("all", "a", "b", "--id", "all").stdout == "all\n")
            #expect(try daemon.ctl("all", "a", "c", "--policy", "nulls", "--id", "nulls").stdout == "nulls\n")
            #expect(try daemon.ctl("any", "b", "c", "--id", "any").stdout == "any\n")
            #expect(try daemon.ctl("race", "c", "a", "--id", "race").stdout == "race\n")
            #expect(try daemon.ctl("all-settled", "a", "c", "--id", "settled").stdout == "settled\n")
            #expect(try daemon.ctl("all", "a", "--policy", "sometimes").status == 64)
            #expect(try daemon.ctl("all", "a", "ghost").status == 4)
            _ = try daemon.ctl("reject", "c", "c failed")
            _ = try daemon.ctl("resolve", "a", "1")
            _ = try daemon.ctl("resolve", "b", "2")
            #expect(try daemon.ctl("wait", "all").stdout == "[1,2]\n")
            #expect(try daemon.ctl("wait", "nulls").stdout == "[1,null]\n")
            #expect(try daemon.ctl("wait", "any").stdout == "2\n")
            #expect(try daemon.ctl("wait", "race").status == 1)
            let settled = try JSONValue(parsing: try daemon.ctl("wait", "settled").stdout)
            #expect(settled.arrayValue?.map { $0["state"] ?? .null } == ["fulfilled", "rejected"])
        }
    }

    @Test("usage errors exit 64: unknown command, missing argument, bad option value")
    func usageErrors() throws {
        try E2EDaemon.with { daemon in
            for arguments in [["frobnicate"], ["wait"], ["wait", "a", "--timeout", "soon"], ["run", "a"], ["then"]] {
                let result = try daemon.ctl(arguments)
                #expect(result.status == 64, "\(arguments): \(result)")
                #expect(!result.stderr.isEmpty)
            }
        }
    }

    @Test("with no daemon listening every command exits 69 with one line naming the socket")
    func daemonUnreachable() throws {
        let path = "/tmp/pe2e-none-\(UUID().uuidString.prefix(8)).sock"
        for arguments in [["info"], ["wait", "a"], ["create"], ["run", "a", "--", "true"]] {
            let result = try E2ECommand.run(E2EBinaries.promisectl, [arguments[0], "--socket", path] + arguments.dropFirst())
            #expect(result.status == 69, "\(arguments): \(result)")
            #expect(result.stderr == "promisectl: daemon not running at \(path); start it with `promised` (or `promised --socket \(path)`)\n")
        }
    }

    @Test("a peer that answers garbage makes promisectl exit 70")
    func internalError() throws {
        let directory = NSTemporaryDirectory() + "pe2e-garbage-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/s.sock"
        let listener = try E2EGarbagePeer(path: path)
        defer { listener.stop() }
        let result = try E2ECommand.run(E2EBinaries.promisectl, ["info", "--socket", path], timeout: .seconds(10))
        #expect(result.status == 70, "\(result)")
        #expect(result.stderr.hasPrefix("promisectl: "))
    }

    @Test("--help of every command shows an example")
    func helpHasExamples() throws {
        for command in [
            "create", "resolve", "reject", "cancel", "get", "wait", "then", "run", "watch", "list", "info",
            "progress", "all", "any", "race", "all-settled", "tree",
        ] {
            let result = try E2ECommand.run(E2EBinaries.promisectl, [command, "--help"])
            #expect(result.status == 0, "\(command)")
            let example = result.stdout.components(separatedBy: "Example:\n").dropFirst().first ?? ""
            #expect(example.hasPrefix("  ") && example.contains("promisectl \(command)"), "\(command)")
        }
    }

    @Test("completion scripts are generated for bash, zsh and fish")
    func completions() throws {
        for shell in ["bash", "zsh", "fish"] {
            let result = try E2ECommand.run(E2EBinaries.promisectl, ["--generate-completion-script", shell])
            #expect(result.status == 0, "\(shell)")
            #expect(result.stdout.contains("all-settled"), "\(shell)")
        }
    }
}
