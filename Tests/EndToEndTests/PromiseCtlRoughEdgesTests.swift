import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
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
                promised --max-line-bytes sets it); keep big values in a file and pass its path

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
            #expect(run.status == 1, "the promise is rejected although the command exited 0")
            let expected: JSONValue = [
                "code": -32004,
                "message": """
                    stdout was larger than 1048576 bytes (the daemon's maxProcessOutputBytes; \
                    promised --max-process-output-bytes sets it); write large output to a file and print its path
                    """,
                "data": ["limit": "maxProcessOutputBytes", "value": 1_048_576],
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
                // The same reason, each naming its own step as where it began.
                #expect(record.reason == .object((expected.objectValue ?? [:]).merging(["origin": .string(id)]) { $1 }), "\(id)")
            }
        }
    }

    @Test("under --max-process-output-bytes 1000, 1000 bytes of stdout fulfil a run step and 1001 reject a run and a then step")
    func stdoutLimitFlagBoundsRunAndThen() throws {
        try E2EDaemon.with(extraArguments: ["--max-process-output-bytes", "1000"]) { daemon in
            func bytes(_ count: Int) -> String { "head -c \(count) /dev/zero | tr '\\0' a" }
            #expect(try daemon.ctl("run", "fits", "--", "sh", "-c", bytes(1000)).status == 0)
            #expect(try daemon.ctl("get", "fits").stdout == "fulfilled \"" + String(repeating: "a", count: 1000) + "\"\n")
            let over = try daemon.ctl("run", "over", "--", "sh", "-c", bytes(1001))
            #expect(over.status == 1, "\(over)")
            #expect(over.stderr.hasPrefix("promisectl: rejecting over although sh exited 0: stdout was larger than 1000 bytes"))
            _ = try daemon.ctl("create", "p")
            _ = try daemon.ctl("then", "p", "--id", "by-then", "--", "sh", "-c", bytes(1001))
            _ = try daemon.ctl("resolve", "p", "1")
            #expect(try daemon.ctl("wait", "by-then", "--timeout", "20").status == 1)
            let client = try daemon.client()
            defer { client.close() }
            let reasons = try ["over", "by-then"].map { try E2E.record(client.call("get", ["id": .string($0)])).reason }
            #expect(reasons[0] == RemoteRejection.stdoutTooLarge(limit: 1000).at("over").json)
            #expect(reasons[1] == RemoteRejection.stdoutTooLarge(limit: 1000).at("by-then").json)
        }
    }

    @Test("forget drops settled promises and says on stderr which ids it kept and why: exit 5 when one was kept, 4 for an unknown id")
    func forgetReportsWhatItKept() throws {
        try E2EDaemon.with { daemon in
            for id in ["done", "pend", "fin", "fin2"] { _ = try daemon.ctl("create", id) }
            for id in ["done", "fin", "fin2"] { _ = try daemon.ctl("resolve", id, "1") }
            _ = try daemon.ctl("all", "done", "pend", "--id", "both")
            let kept = try daemon.ctl("forget", "done", "pend", "ghost", "fin", "fin")
            #expect(kept.status == 5, "\(kept)")
            #expect(kept.stdout == "")
            #expect(kept.stderr == """
                promisectl: done is needed by a pending promise (a then child or a combinator): not forgotten; \
                forget it once that has settled
                promisectl: pend is pending: not forgotten
                promisectl: no such promise: ghost

                """)
            #expect(try daemon.ctl("get", "fin").status == 4)
            #expect(try daemon.ctl("get", "done").stdout == "fulfilled 1\n")
            let unknown = try daemon.ctl("forget", "fin2", "ghost")
            #expect(unknown.status == 4, "\(unknown)")
            #expect(unknown.stderr == "promisectl: no such promise: ghost\n")
            let clean = try daemon.ctl("forget", "both", "done")
            #expect(clean.status == 5, "both is still pending: \(clean)")
            _ = try daemon.ctl("resolve", "pend", "2")
            let all = try daemon.ctl("forget", "both", "done", "pend")
            #expect(all.status == 0, "\(all)")
            #expect(all.stderr == "")
            #expect(try daemon.ctl("create", "done").status == 0, "a forgotten id may be created again")
        }
    }

    @Test("--socket is accepted before the subcommand as well as after it")
    func socketBeforeSubcommand() throws {
        try E2EDaemon.with { daemon in
            let elsewhere = ["PROMISED_SOCKET": daemon.directory + "/nothing-here.sock"]
            let before = try E2ECommand.run(
                E2EBinaries.promisectl, ["--socket", daemon.socketPath, "create", "a"], environment: elsewhere)
            #expect(before.status == 0, "\(before)")
            #expect(before.stdout == "a\n")
            let equals = try E2ECommand.run(
                E2EBinaries.promisectl, ["--socket=" + daemon.socketPath, "get", "a"], environment: elsewhere)
            #expect(equals.stdout == "pending\n", "\(equals)")
            let after = try E2ECommand.run(
                E2EBinaries.promisectl, ["get", "a", "--socket", daemon.socketPath], environment: elsewhere)
            #expect(after.stdout == "pending\n", "\(after)")
            let unreachable = try E2ECommand.run(E2EBinaries.promisectl, ["info"], environment: elsewhere)
            #expect(unreachable.status == 69, "without --socket the environment's socket is used: \(unreachable)")
        }
    }

    @Test("promised --version and promisectl --version print the version and exit 0")
    func versions() throws {
        for binary in [E2EBinaries.promised, E2EBinaries.promisectl] {
            let result = try E2ECommand.run(binary, ["--version"])
            #expect(result.status == 0, "\(binary): \(result)")
            #expect(result.stdout == PromiseProtocol.daemonVersion + "\n", "\(binary)")
        }
    }

    @Test("examples/README.md names only build paths that make run (README's command) builds")
    func examplesReadmeNamesBuiltPaths() throws {
        let root = E2EBinaries.packageRoot
        let readme = try String(contentsOf: root.appendingPathComponent("examples/README.md"), encoding: .utf8)
        let makefile = try String(contentsOf: root.appendingPathComponent("Makefile"), encoding: .utf8)
        // `make run` depends on `release`, which builds these products with -c release.
        #expect(makefile.contains("\nrun: release\n"))
        // The release builds: `$(SWIFT) build $(RELEASE) … --product NAME`, RELEASE being `-c release …`,
        // and promisectl's `$(SWIFT) build $(CTL_RELEASE) … --product NAME`, CTL_RELEASE adding its scratch folder.
        #expect(makefile.contains("\nRELEASE      := -c release"))
        #expect(makefile.contains("\nCTL_RELEASE  := $(RELEASE) --scratch-path $(CTL_SCRATCH)\n"))
        let lines = makefile.split(separator: "\n")
        let ctlScratch = try #require(lines.first { $0.hasPrefix("CTL_SCRATCH  := ") }?.split(separator: " ").last)
        let released = lines.filter { $0.contains("--product ") }.compactMap { line -> String? in
            guard let product = line.split(separator: " ").last else { return nil }
            if line.contains("build $(RELEASE)") { return ".build/release/\(product)" }
            if line.contains("build $(CTL_RELEASE)") { return "\(ctlScratch)/release/\(product)" }
            return nil
        }
        #expect(Set(released) == [".build/release/promised", ".build-static/release/promisectl"])
        let named = readme.matches(of: /\.build(-static)?\/[A-Za-z0-9_.\/-]*[A-Za-z0-9_]/).map { String($0.output.0) }
        #expect(!named.isEmpty)
        for path in named {
            #expect(released.contains(path), "examples/README.md names \(path), which make run does not build")
        }
    }

    @Test("then runs CMD with the caller's environment and directory (a relative --cwd from there); --daemon-env uses the daemon's; PROMISE_ID stays the daemon's")
    func thenRunsWithCallersEnvironment() throws {
        try E2EDaemon.with(extraArguments: ["--max-line-bytes", "65536"]) { daemon in
            let folder = daemon.directory + "/caller"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            let script = #"printf '%s|%s|%s' "${CALLER_ONLY:-unset}" "$PWD" "$PROMISE_ID""#
            // A shell in `folder` with a variable the daemon does not have, and a stale PROMISE_ID.
            func then(_ arguments: [String], environment: [String: String]) throws -> E2ECommandResult {
                let quoted = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
                return try E2ECommand.run(
                    "/bin/sh", ["-c", "cd '\(folder)' && exec '\(E2EBinaries.promisectl)' " + quoted.joined(separator: " ")],
                    environment: ["PROMISED_SOCKET": daemon.socketPath, "PROMISE_ID": "stale"].merging(environment) { _, new in new })
            }
            _ = try daemon.ctl("create", "p")
            let caller = try then(["then", "p", "--id", "c1", "--", "sh", "-c", script], environment: ["CALLER_ONLY": "from-caller"])
            #expect(caller.status == 0, "\(caller)")
            let daemonEnv = try then(
                ["then", "p", "--id", "c2", "--daemon-env", "--", "sh", "-c", script], environment: ["CALLER_ONLY": "from-caller"])
            #expect(daemonEnv.status == 0, "\(daemonEnv)")
            try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: false)
            let relative = try then(["then", "p", "--id", "c4", "--cwd", "sub", "--", "sh", "-c", script], environment: [:])
            #expect(relative.status == 0, "\(relative)")
            let tooLarge = try then(
                ["then", "p", "--id", "c3", "--", "true"], environment: ["CALLER_ONLY": String(repeating: "x", count: 70_000)])
            #expect(tooLarge.status == 64, "\(tooLarge)")
            #expect(tooLarge.stderr.hasPrefix("promisectl: the request, with this shell's environment ("))
            #expect(tooLarge.stderr.contains("promised --max-line-bytes sets it); pass --daemon-env"))
            _ = try daemon.ctl("resolve", "p", "1")
            #expect(try daemon.ctl("wait", "c1", "--raw").stdout == "from-caller|\(folder)|p\n")
            #expect(try daemon.ctl("wait", "c2", "--raw").stdout == "unset|\(folder)|p\n")
            #expect(try daemon.ctl("wait", "c4", "--raw").stdout == "unset|\(folder)/sub|p\n", "--cwd is taken from the caller's directory")
            #expect(try daemon.ctl("get", "c3").status == 4, "nothing was made")
        }
    }

    @Test("a mistyped command exits 64 naming it and the command it is close to; a word close to none gets no guess")
    func mistypedCommandIsNamed() throws {
        try E2EDaemon.with { daemon in
            let typo = try daemon.ctl("reslove", "a", "1")
            #expect(typo.status == 64, "\(typo)")
            #expect(typo.stderr == "promisectl: unknown command 'reslove'; did you mean 'resolve'? (promisectl --help lists the commands)\n")
            let swapped = try daemon.ctl("--socket", daemon.socketPath, "wiat", "a")
            #expect(swapped.status == 64 && swapped.stderr.contains("did you mean 'wait'?"), "\(swapped)")
            let unknown = try daemon.ctl("frobnicate")
            #expect(unknown.status == 64, "\(unknown)")
            #expect(unknown.stderr == "promisectl: unknown command 'frobnicate' (promisectl --help lists the commands)\n")
            // The real commands are untouched, help included.
            #expect(try daemon.ctl("help").status == 0)
            #expect(try daemon.ctl("get", "a").status == 4)
        }
    }
}
