import Foundation
import Testing

/// promisectl writes its lines with write(2): a stdout that takes nothing
/// is an error it names, with status 70 (it trapped in FileHandle before).
@Suite("promisectl output failures")
struct OutputFailureTests {
    @Test("a full stdout ends promisectl with status 70 and a message on stderr, not a crash")
    func fullStandardOutput() throws {
        try E2EDaemon.with { daemon in
            #expect(try daemon.ctl("create", "v").status == 0)
            #expect(try daemon.ctl("resolve", "v", "1").status == 0)
            #expect(try daemon.ctl("run", "r", "--", "echo", "logged").status == 0)
            // Both ways in: the hand parser's and ArgumentParser's (`--socket` twice); and `logs`, which writes a step's log.
            for arguments in [["get", "v", "--socket", daemon.socketPath],
                              ["--socket", daemon.socketPath, "get", "v", "--socket", daemon.socketPath],
                              ["logs", "r", "--socket", daemon.socketPath]] {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: E2EBinaries.promisectl)
                process.arguments = arguments
                process.standardOutput = FileHandle(forWritingAtPath: "/dev/full")
                let errors = Pipe()
                process.standardError = errors
                try process.run()
                let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                #expect(process.terminationReason == .exit, "\(arguments)")
                #expect(process.terminationStatus == 70, "\(arguments)")
                #expect(stderr == "promisectl: cannot write to descriptor 1: No space left on device\n", "\(arguments)")
            }
        }
    }
}
