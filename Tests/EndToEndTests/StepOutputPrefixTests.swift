import Foundation
import Testing

/// The warnings of steps that succeeded: `logs --prefix P` and
/// `wait --show-output` print their output, each line led by its step's id.
@Suite("promisectl logs --prefix and wait --show-output")
struct StepOutputPrefixTests {
    /// build/src → build/cc/a, build/cc/b (each warns on stderr, prints on stdout) → build/objs (all) → build/link.
    private static func build(_ daemon: E2EDaemon) throws {
        for line in [
            ["create", "build/src"],
            ["then", "build/src", "--id", "build/cc/a", "--", "sh", "-c", "echo a.o; echo 'a.c:3: warning: x' >&2; echo 'a.c:9: warning: y' >&2"],
            // After a's end, for one order of the lines that `wait --show-output` prints as steps end.
            ["then", "build/src", "--id", "build/cc/b", "--", "sh", "-c", "sleep 0.5; echo b.o; echo 'b.c:1: warning: z' >&2"],
            ["all", "build/cc/a", "build/cc/b", "--id", "build/objs"],
            ["then", "build/objs", "--id", "build/link", "--", "sh", "-c", "cat >/dev/null; echo linked"],
            ["create", "other/x"],
        ] {
            let result = try daemon.ctl(line)
            try #require(result.status == 0, "\(line): \(result)")
        }
    }

    @Test("logs --prefix prints every step's lines under P led by its id, stdout and stderr apart, in creation order")
    func logsPrefix() throws {
        try E2EDaemon.with { daemon in
            try Self.build(daemon)
            _ = try daemon.ctl("resolve", "build/src", "1")
            #expect(try daemon.ctl("wait", "build/link").status == 0)
            let result = try daemon.ctl("logs", "--prefix", "build/")
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "build/cc/a: a.o\nbuild/cc/b: b.o\nbuild/link: linked\n")
            #expect(result.stderr == "build/cc/a: a.c:3: warning: x\nbuild/cc/a: a.c:9: warning: y\nbuild/cc/b: b.c:1: warning: z\n")
            #expect(try daemon.ctl("logs", "--prefix", "nothing/").stdout == "")
            #expect(try daemon.ctl("logs", "build/cc/a", "--prefix", "build/").status == 64)
            #expect(try daemon.ctl("logs", "--prefix", "build/", "--follow").status == 64)
            #expect(try daemon.ctl("logs").status == 64)
        }
    }

    @Test("wait --show-output prints the stderr of the steps it waited on, led by their ids; without it nothing")
    func waitShowOutput() throws {
        try E2EDaemon.with { daemon in
            try Self.build(daemon)
            let waiter = try daemon.startCtl(["wait", "build/link", "--show-output"])
            _ = try daemon.ctl("resolve", "build/src", "1")
            let result = try waiter.finish()
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "\"linked\"\n")
            #expect(result.stderr == "build/cc/a: a.c:3: warning: x\nbuild/cc/a: a.c:9: warning: y\nbuild/cc/b: b.c:1: warning: z\n")
            let plain = try daemon.ctl("wait", "build/link")
            #expect(plain.stdout == "\"linked\"\n" && plain.stderr == "", "piped, without --show-output: \(plain)")
        }
    }

    @Test("wait --show-output prints a step's stderr as that step ends, while the steps after it still run")
    func waitShowOutputAsStepsEnd() throws {
        try E2EDaemon.with { daemon in
            let gate = daemon.directory + "/gate"
            for line in [
                ["create", "src"],
                ["then", "src", "--id", "warn", "--", "sh", "-c", "echo 'w.c:1: warning: early' >&2"],
                ["then", "warn", "--id", "slow", "--", "sh", "-c",
                 "while [ ! -e \"$0\" ]; do sleep 0.05; done; echo 'late' >&2; echo done", gate],
            ] {
                let result = try daemon.ctl(line)
                try #require(result.status == 0, "\(line): \(result)")
            }
            let waiter = try daemon.startCtl(["wait", "slow", "--show-output"])
            _ = try daemon.ctl("resolve", "src", "1")
            #expect(E2E.eventually(timeout: .seconds(20)) { waiter.stderrSoFar == "warn: w.c:1: warning: early\n" },
                    "the warning was not shown while slow ran: \(waiter.stderrSoFar)")
            #expect(try daemon.ctl("get", "slow", "--json").stdout.contains("\"state\":\"pending\""))
            _ = FileManager.default.createFile(atPath: gate, contents: nil)
            let result = try waiter.finish()
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "\"done\"\n")
            #expect(result.stderr == "warn: w.c:1: warning: early\nslow: late\n")
        }
    }

    @Test("wait --show-output --timeout gives up with exit 3 after printing the steps that ended")
    func waitShowOutputTimesOut() throws {
        try E2EDaemon.with { daemon in
            for line in [
                ["create", "src"],
                ["then", "src", "--id", "warn", "--", "sh", "-c", "echo 'careful' >&2"],
                ["then", "warn", "--id", "never", "--", "sleep", "30"],
                ["resolve", "src", "1"],
            ] {
                let result = try daemon.ctl(line)
                try #require(result.status == 0, "\(line): \(result)")
            }
            let result = try daemon.ctl("wait", "never", "--show-output", "--timeout", "1s")
            #expect(result.status == 3, "\(result)")
            #expect(result.stderr == "warn: careful\npromisectl: timed out waiting for never\n", "\(result)")
            _ = try daemon.ctl("cancel", "never")
        }
    }
}
