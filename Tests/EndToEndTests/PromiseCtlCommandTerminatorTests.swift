import Foundation
import Testing

/// `then` and `run` given a command without `--` before it: the message says
/// where the command goes, with the line so written.
@Suite("promisectl then/run: a command without --")
struct PromiseCtlCommandTerminatorTests {
    @Test("then x --id t gcc -c x.c exits 64 saying that a command goes after --, and makes nothing")
    func thenWithoutTerminator() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "x")
            let result = try daemon.ctl("then", "x", "--id", "t", "gcc", "-c", "x.c")
            #expect(result.status == 64, "\(result)")
            #expect(result.stdout == "")
            #expect(result.stderr == """
                promisectl: Unknown option '-c' (a command goes after --: promisectl then x --id t -- gcc -c x.c)

                """)
            #expect(try daemon.ctl("get", "t").status == 4, "no child was made")
        }
    }

    @Test("a command without options (then x echo hi, run y true) is told the same; a then without a command still works")
    func strayWordsWithoutOptions() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "x")
            let then = try daemon.ctl("then", "x", "echo", "hi")
            #expect(then.status == 64, "\(then)")
            #expect(then.stderr.hasSuffix("(a command goes after --: promisectl then x -- echo hi)\n"), "\(then)")
            let run = try daemon.ctl("run", "y", "--grace", "1", "sh", "-c", "exit 0")
            #expect(run.status == 64, "\(run)")
            #expect(run.stderr.hasSuffix("(a command goes after --: promisectl run y --grace 1 -- sh -c 'exit 0')\n"), "\(run)")
            #expect(try daemon.ctl("get", "y").status == 4, "nothing ran")
            let plain = try daemon.ctl("then", "x", "--id", "child")
            #expect(plain.status == 0 && plain.stdout == "child\n", "\(plain)")
            let unknown = try daemon.ctl("then", "x", "--bogus")
            #expect(unknown.status == 64, "\(unknown)")
            #expect(!unknown.stderr.contains("a command goes after"), "an unknown option alone is not a command: \(unknown)")
        }
    }
}
