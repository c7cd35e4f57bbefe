import ArgumentParser
import Testing
@testable import promisectl

/// The pool options and commands of promisectl, parsed in-process (no daemon).
@Suite("promisectl parsing: pools")
struct PoolCommandParsingTests {
    @Test("then and run take --pool before --")
    func poolOption() throws {
        let then = try #require(try PromiseCtl.parseAsRoot(["then", "src", "--pool", "cc", "--", "cc", "-c", "a.c"]) as? PromiseCtl.Then)
        #expect(then.pool == "cc")
        #expect(then.command == ["cc", "-c", "a.c"])
        let run = try #require(try PromiseCtl.parseAsRoot(["run", "--pool", "cc", "obj/b.o", "--", "true"]) as? PromiseCtl.Run)
        #expect(run.pool == "cc")
        #expect(run.id == "obj/b.o")
    }

    @Test("pool takes a name and an optional limit; pools takes --json")
    func poolCommands() throws {
        let set = try #require(try PromiseCtl.parseAsRoot(["pool", "cc", "4"]) as? PromiseCtl.Pool)
        #expect(set.name == "cc")
        #expect(set.limit == 4)
        let show = try #require(try PromiseCtl.parseAsRoot(["pool", "default"]) as? PromiseCtl.Pool)
        #expect(show.limit == nil)
        let list = try #require(try PromiseCtl.parseAsRoot(["pools", "--json"]) as? PromiseCtl.Pools)
        #expect(list.json)
    }

    @Test("a bad pool name or limit, and then --pool without a command, are usage errors before anything is sent",
          arguments: [
              (["pool", "c c", "1"], "a pool name is 1 to 64 letters, digits, ., _ or -, not c c"),
              (["pool", "cc", "-1"], "Unknown option '-1'"),
              (["pool", "cc", "65537"], "LIMIT must be 0 to 65536"),
              (["pool", String(repeating: "x", count: 65)],
               "a pool name is 1 to 64 letters, digits, ., _ or -, not " + String(repeating: "x", count: 65)),
              (["run", "--pool", "a/b", "id", "--", "true"], "a pool name is 1 to 64 letters, digits, ., _ or -, not a/b"),
              (["then", "p", "--pool", "cc"], "--pool needs a command after --"),
          ])
    func refused(arguments: [String], message: String) {
        do {
            _ = try PromiseCtl.parseAsRoot(arguments)
            Issue.record("\(arguments) was accepted")
        } catch {
            #expect(PromiseCtl.message(for: error) == message, "\(arguments)")
        }
    }
}
