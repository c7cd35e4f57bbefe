import ArgumentParser
import Testing
@testable import promisectl

/// promisectl's command line parsed in-process (no daemon): the shapes the
/// pinned table promises, and what is refused before anything is sent.
@Suite("promisectl parsing")
struct PromiseCtlParsingTests {
    @Test("wait takes --timeout, --json and --raw")
    func waitOptions() throws {
        let command = try #require(try PromiseCtl.parseAsRoot(["wait", "build/lib", "--timeout", "2.5", "--raw"]) as? PromiseCtl.Wait)
        #expect(command.id == "build/lib")
        #expect(command.timeout?.seconds == 2.5)
        #expect(command.raw)
        #expect(!command.json)
    }

    @Test("then keeps everything after -- as the command, options included")
    func thenCommand() throws {
        let command = try #require(
            try PromiseCtl.parseAsRoot(["then", "p", "--id", "c", "--on", "settled", "--", "grep", "--count", "x"]) as? PromiseCtl.Then)
        #expect(command.childID == "c")
        #expect(command.on == .settled)
        #expect(command.command == ["grep", "--count", "x"])
    }

    @Test("every command names itself, so that start-up derives no name from a type by reflection")
    func commandNamesAreExplicit() {
        for command in PromiseCtl.configuration.subcommands {
            #expect(command.configuration.commandName != nil, "\(command)")
        }
    }

    @Test("--socket is accepted by every command")
    func sharedSocketOption() throws {
        let command = try #require(try PromiseCtl.parseAsRoot(["cancel", "a", "--socket", "/tmp/x.sock"]) as? PromiseCtl.Cancel)
        #expect(command.connection.socket == "/tmp/x.sock")
    }

    @Test("--socket before the command reaches the command; after it too, the last one counting")
    func socketBeforeCommand() throws {
        let before = try #require(try PromiseCtl.parseAsRoot(["--socket", "/tmp/x.sock", "cancel", "a"]) as? PromiseCtl.Cancel)
        #expect(before.connection.socket == "/tmp/x.sock")
        let both = try #require(
            try PromiseCtl.parseAsRoot(["--socket", "/tmp/x.sock", "cancel", "a", "--socket", "/tmp/y.sock"]) as? PromiseCtl.Cancel)
        #expect(both.connection.socket == "/tmp/y.sock")
    }

    @Test("all takes a policy from the pinned set and refuses others")
    func allPolicies() throws {
        for policy in ["fail-fast", "all-errors", "ignore-errors", "nulls"] {
            let command = try #require(try PromiseCtl.parseAsRoot(["all", "a", "b", "--policy", policy]) as? PromiseCtl.All)
            #expect(command.policy.rawValue == policy)
            #expect(command.inputs.ids == ["a", "b"])
        }
        #expect(throws: (any Error).self) { try PromiseCtl.parseAsRoot(["all", "a", "--policy", "sometimes"]) }
    }

    @Test("validation refuses what the daemon would only refuse later, with exit status 64")
    func validationFailures() {
        for arguments in [
            ["progress", "a", "1.5"], ["run", "a"], ["watch"], ["wait", "a", "--json", "--raw"],
            ["create", "--timeout", "-1"], ["then", "p", "--env", "NOEQUALS", "--", "true"],
        ] {
            #expect(throws: (any Error).self, "\(arguments)") { try PromiseCtl.parseAsRoot(arguments) }
            do {
                _ = try PromiseCtl.parseAsRoot(arguments)
            } catch {
                #expect(PromiseCtl.exitCode(for: error) == ExitCode(64), "\(arguments)")
            }
        }
    }

    @Test("the help of the root lists every pinned command")
    func rootHelp() {
        let help = PromiseCtl.helpMessage()
        for command in [
            "create", "resolve", "reject", "cancel", "get", "wait", "then", "run", "watch", "list", "info",
            "progress", "all", "any", "race", "all-settled", "tree",
        ] {
            #expect(help.contains("  \(command) "), "\(command)")
        }
    }
}
