import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// A script run a second time makes the same ids: `forget --prefix` and
/// `create --replace` / `then --replace` let it, and keep what is pending.
@Suite("promisectl: a script run again (forget --prefix, --replace)")
struct PromiseCtlRerunTests {
    /// The script of a small build: a source, two compiles, their join.
    private static func build(_ daemon: E2EDaemon, replace: Bool) throws -> [E2ECommandResult] {
        let flag = replace ? ["--replace"] : []
        return try [
            daemon.ctl(["create", "err3/src"] + flag),
            daemon.ctl(["then", "err3/src", "--id", "err3/a"] + flag + ["--", "echo", "a"]),
            daemon.ctl(["then", "err3/src", "--id", "err3/b"] + flag + ["--", "echo", "b"]),
            daemon.ctl(["all", "err3/a", "err3/b", "--id", "err3/objs"] + flag),
            daemon.ctl("resolve", "err3/src", "1"),
            daemon.ctl("wait", "err3/objs"),
        ]
    }

    @Test("running a script twice collides (exit 5); with --replace on create, then and all the second run makes every step anew")
    func replaceMakesTheSecondRunWork() throws {
        try E2EDaemon.with { daemon in
            #expect(try Self.build(daemon, replace: false).map(\.status) == [0, 0, 0, 0, 0, 0])
            let again = try daemon.ctl("create", "err3/src")
            #expect(again.status == 5)
            #expect(again.stderr == "promisectl: a promise with id \"err3/src\" already exists\n")
            let second = try Self.build(daemon, replace: true)
            #expect(second.map(\.status) == [0, 0, 0, 0, 0, 0], "\(second)")
            #expect(second[3].stdout == "err3/objs\n")
            #expect(second[5].stdout == #"["a","b"]"# + "\n")
            #expect(second[1].stdout == "err3/a\n")
            #expect(try daemon.ctl("wait", "err3/a", "--raw").stdout == "a\n")
        }
    }

    @Test("--replace keeps a pending promise and a settled one a pending promise needs (exit 5, saying so); not beside --if-exists")
    func replaceKeepsPendingAndNeeded() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "p")
            let pending = try daemon.ctl("create", "p", "--replace")
            #expect(pending.status == 5, "\(pending)")
            #expect(pending.stderr == "promisectl: a promise with id \"p\" is pending: replace forgets only a settled one\n")
            _ = try daemon.ctl("create", "done")
            _ = try daemon.ctl("resolve", "done", "1")
            _ = try daemon.ctl("all", "done", "p", "--id", "join")
            let needed = try daemon.ctl("create", "done", "--replace")
            #expect(needed.status == 5, "\(needed)")
            #expect(needed.stderr.contains("is needed by a pending promise (a then child or a combinator): not replaced"))
            #expect(try daemon.ctl("get", "done").stdout == "fulfilled 1\n")
            let thenPending = try daemon.ctl("then", "done", "--id", "p", "--replace")
            #expect(thenPending.status == 5, "\(thenPending)")
            let both = try daemon.ctl("create", "x", "--replace", "--if-exists")
            #expect(both.status == 64, "\(both)")
            let inputReplaced = try daemon.ctl("all", "done", "--id", "done", "--replace")
            #expect(inputReplaced.status == 64 && inputReplaced.stderr.contains("cannot replace one of its own inputs"),
                    "\(inputReplaced)")
            let joinPending = try daemon.ctl("all", "done", "--id", "join", "--replace")
            #expect(joinPending.status == 5, "\(joinPending)")
            #expect(try daemon.ctl("race", "done", "--replace").status == 64, "--replace without --id")
            let noID = try daemon.ctl("then", "done", "--replace")
            #expect(noID.status == 64 && noID.stderr.contains("--replace needs the child's --id"), "\(noID)")
        }
    }

    @Test("forget --prefix drops the settled promises under P, prints how many, and says what it kept (exit 5)")
    func forgetPrefix() throws {
        try E2EDaemon.with { daemon in
            #expect(try Self.build(daemon, replace: false).map(\.status) == [0, 0, 0, 0, 0, 0])
            _ = try daemon.ctl("create", "err3/later")
            _ = try daemon.ctl("create", "other/x")
            _ = try daemon.ctl("resolve", "other/x", "1")
            let kept = try daemon.ctl("forget", "--prefix", "err3/")
            #expect(kept.status == 5, "\(kept)")
            #expect(kept.stdout == "4\n")
            #expect(kept.stderr == "promisectl: kept 1 pending under err3/\n")
            #expect(try daemon.ctl("get", "other/x").status == 0, "outside the prefix")
            #expect(try daemon.ctl("get", "err3/a").status == 4)
            _ = try daemon.ctl("resolve", "err3/later", "1")
            let clean = try daemon.ctl("forget", "--prefix", "err3/")
            #expect(clean.status == 0 && clean.stdout == "1\n" && clean.stderr == "", "\(clean)")
            #expect(try Self.build(daemon, replace: false).map(\.status) == [0, 0, 0, 0, 0, 0], "the same script runs again")
            #expect(try daemon.ctl("forget", "--prefix", "").status == 64)
            #expect(try daemon.ctl("forget", "a", "--prefix", "b").status == 64)
        }
    }

    @Test("forget with prefix pages: 2,500 settled promises under P are forgotten over several calls, each with a cursor")
    func forgetPrefixPages() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            defer { client.close() }
            for i in 0..<2_500 {
                _ = try client.call("create", ["id": .string("bulk/\(i)")])
                _ = try client.call("resolve", ["id": .string("bulk/\(i)"), "value": .int(i)])
            }
            let first = try client.call("forget", ["prefix": "bulk/"])
            #expect(first["forgotten"] == .int(1_000))
            #expect(first["cursor"]?.stringValue != nil)
            let result = try daemon.ctl("forget", "--prefix", "bulk/")
            #expect(result.status == 0 && result.stdout == "1500\n", "\(result)")
            #expect(try client.call("info")["promises"] == .int(0))
            let both = Result { try client.call("forget", ["prefix": "bulk/", "ids": ["a"]]) }
            #expect(throws: RPCError.self) { try both.get() }
        }
    }
}
