import Testing
@testable import promisectl

/// promisectl's message for a first word that names no command (UnknownCommand.swift).
@Suite("promisectl: an unknown command")
struct UnknownCommandTests {
    @Test("a word near one command names it, after --socket in either form")
    func nearWordIsNamed() {
        let expected = "unknown command 'reslove'; did you mean 'resolve'? (promisectl --help lists the commands)"
        #expect(UnknownCommand.message(for: ["reslove", "a"]) == expected)
        #expect(UnknownCommand.message(for: ["--socket=/tmp/x.sock", "reslove"]) == expected)
        #expect(UnknownCommand.message(for: ["--socket", "/tmp/x.sock", "reslove"]) == expected)
    }

    @Test("a word as near to two commands as to one another gets no guess")
    func tieGetsNoGuess() {
        // "poolx" is one edit from both `pool` and `pools`.
        #expect(UnknownCommand.message(for: ["poolx"]) == "unknown command 'poolx' (promisectl --help lists the commands)")
    }

    @Test("commands, help, options first and empty lines are left to ArgumentParser",
          arguments: [["list"], ["help"], ["pool", "set"], [], ["--version"], ["--socket"], ["-h", "reslove"], ["--socket", "s"]])
    func leftToArgumentParser(arguments: [String]) {
        #expect(UnknownCommand.message(for: arguments) == nil)
    }

    @Test("a swapped pair of letters is one edit")
    func swapIsOneEdit() {
        #expect(UnknownCommand.distance("wiat", "wait") == 1)
        #expect(UnknownCommand.distance("kitten", "sitting") == 3)
        #expect(UnknownCommand.distance("", "get") == 3)
    }
}
