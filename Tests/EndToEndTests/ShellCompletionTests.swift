import Foundation
import Testing

/// README's completion commands on a fresh account, and completion of
/// promise ids from the daemon.
@Suite("promisectl shell completions")
struct ShellCompletionTests {
    /// The commands of README's completion block.
    private static func readmeCommands() throws -> [String] {
        let readme = try String(contentsOf: E2EBinaries.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "Shell completions come from argument-parser"))
        let block = try #require(readme[start.upperBound...].range(of: "```sh\n"))
        let end = try #require(readme[block.upperBound...].range(of: "```"))
        return readme[block.upperBound..<end.lowerBound].split(separator: "\n").map(String.init)
    }

    @Test("README's completion commands work in a home without the folders, and write the three scripts")
    func readmeCommandsOnAFreshAccount() throws {
        let home = try E2ETemporaryFolder()
        let commands = try Self.readmeCommands()
        #expect(commands.count == 6)
        let path = E2EBinaries.folder.path + ":/usr/bin:/bin"
        let result = try E2ECommand.run(
            "/bin/sh", ["-e", "-c", commands.joined(separator: "\n")], environment: ["HOME": home.path, "PATH": path])
        #expect(result.status == 0, "\(result)")
        for file in [
            ".local/share/bash-completion/completions/promisectl", ".zfunc/_promisectl",
            ".config/fish/completions/promisectl.fish",
        ] {
            let text = try String(contentsOfFile: home.path + "/" + file, encoding: .utf8)
            #expect(text.contains("promisectl"), "\(file)")
        }
    }

    @Test("completing an id offers the daemon's ids that start with the word; with no daemon, nothing and no error")
    func idsFromTheDaemon() throws {
        try E2EDaemon.with { daemon in
            for id in ["build/lib", "build/app", "test/x"] { _ = try daemon.ctl("create", id) }
            // What the generated scripts run at a Tab: `promisectl ---completion get -- ARGUMENT INDEX CURSOR WORDS…`.
            let offered = try daemon.ctl("---completion", "get", "--", "positional@0", "2", "2", "promisectl", "get", "bu")
            #expect(offered.status == 0, "\(offered)")
            #expect(offered.stdout.split(separator: "\n").sorted() == ["build/app", "build/lib"], "\(offered)")
            let nowhere = try E2ECommand.run(
                E2EBinaries.promisectl, ["---completion", "get", "--", "positional@0", "2", "0", "promisectl", "get", ""],
                environment: ["PROMISED_SOCKET": daemon.directory + "/none.sock"])
            #expect(nowhere.stdout == "" && nowhere.stderr == "", "\(nowhere)")
        }
    }
}
