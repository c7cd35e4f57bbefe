import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// `list` and `pools` on a terminal (`PROMISECTL_TTY=1`): every header over
/// its column.
@Suite("promisectl list and pools: aligned tables")
struct PromiseCtlTableAlignmentTests {
    private static func onTerminal(_ daemon: E2EDaemon, _ arguments: String...) throws -> E2ECommandResult {
        try E2ECommand.run(
            E2EBinaries.promisectl, arguments, environment: ["PROMISED_SOCKET": daemon.socketPath, "PROMISECTL_TTY": "1"])
    }

    @Test("list --prefix on a terminal sizes its columns from every page: the daemon's pages of a prefix scan hold few rows")
    func listAlignedAcrossPages() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            defer { client.close() }
            // Unrelated promises between the matches make the daemon cut its pages by candidates looked at.
            for i in 0..<3_000 {
                let id = i % 600 == 599 ? "wanted/" + String(repeating: "x", count: i / 100) : "other/\(i)"
                _ = try client.call("create", ["id": .string(id)])
            }
            let result = try Self.onTerminal(daemon, "list", "--prefix", "wanted/")
            #expect(result.status == 0, "\(result)")
            let lines = result.stdout.split(separator: "\n")
            #expect(lines.count == 6, "\(result.stdout)")
            let header = try #require(lines.first)
            // The longest id is 36 characters: every column starts where its header does, in every row.
            #expect(header.hasPrefix("ID" + String(repeating: " ", count: 36) + "STATE    PID  STARTED   DURATION"), "\(header)")
            let durationColumn = try #require(header.range(of: "DURATION")).lowerBound.utf16Offset(in: header)
            for line in lines.dropFirst() {
                #expect(line.hasPrefix("wanted/"), "\(line)")
                #expect(Array(line)[38...].starts(with: "pending"), "\(line)")
                #expect(Array(line)[durationColumn - 1] == " " && Array(line)[durationColumn] != " ", "\(line)")
            }
        }
    }

    @Test("pools on a terminal aligns NAME LIMIT RUNNING QUEUED; piped, the words stay one space apart")
    func poolsAligned() throws {
        try E2EDaemon.with(extraArguments: ["--pool", "compilers=2"]) { daemon in
            let terminal = try Self.onTerminal(daemon, "pools")
            #expect(terminal.status == 0, "\(terminal)")
            #expect(terminal.stdout.split(separator: "\n").first == "NAME       LIMIT  RUNNING  QUEUED")
            #expect(terminal.stdout.contains("\ncompilers  2      0        0\n"), "\(terminal.stdout)")
            let piped = try daemon.ctl("pools")
            #expect(piped.stdout.hasPrefix("NAME LIMIT RUNNING QUEUED\n"), "\(piped)")
            #expect(piped.stdout.contains("\ncompilers 2 0 0\n"), "\(piped)")
        }
    }
}
