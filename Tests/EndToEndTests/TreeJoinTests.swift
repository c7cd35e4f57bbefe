import Foundation
import Testing
@testable import promisectl

/// `tree` of a build whose link waits on every compile: the join drawn
/// once, and compile commands shown with the file names at their end.
@Suite("promisectl tree: a join of 36 steps, long commands")
struct TreeJoinTests {
    @Test("a join of 36 compiles is drawn once, under the first; the other 35 end their line with → ID (above)")
    func joinOfThirtySix() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "lua/src")
            let files = (0..<36).map { "l\($0)" }
            for file in files {
                let result = try daemon.ctl(
                    "then", "lua/src", "--id", "lua/cc/\(file)", "--", "sh", "-c",
                    "true gcc -std=gnu99 -O2 -Wall -Wextra -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -c \(file).c -o \(file).o")
                try #require(result.status == 0, "\(result)")
            }
            _ = try daemon.ctl(["all"] + files.map { "lua/cc/\($0)" } + ["--id", "lua/objs"])
            _ = try daemon.ctl("then", "lua/objs", "--id", "lua/link", "--", "true")
            let result = try daemon.ctl("tree", "lua/src")
            #expect(result.status == 0, "\(result)")
            // Without durations ("  [1.2s]"): a pending promise shows its age.
            let lines = result.stdout.replacingOccurrences(of: #"  \[[0-9.]+(ms|s)\]"#, with: "", options: .regularExpression)
                .split(separator: "\n").map(String.init)
            #expect(lines.count == 1 + 36 + 2, "\(result.stdout)")
            #expect(lines.filter { $0.contains("lua/objs  all of 36") }.count == 1)
            #expect(lines.filter { $0.hasSuffix("→ lua/objs (above)") }.count == 35)
            #expect(!result.stdout.contains("shown above"))
            #expect(lines[1] == "├── lua/cc/l0  exec: sh -c 'true gcc -std=gnu99 -O2…UA_USE_LINUX -c l0.c -o l0.o'  pending")
            #expect(lines[2] == "│   └── lua/objs  all of 36  pending")
            #expect(lines[3] == "│       └── lua/link  exec: true  pending")
            #expect(lines.last?.hasPrefix("└── lua/cc/l35  exec: sh -c 'true gcc") == true)
            #expect(lines.last?.hasSuffix("-c l35.c -o l35.o'  pending  → lua/objs (above)") == true)
            _ = try daemon.ctl("cancel", "lua/src")
        }
    }

    @Test("a command is cut in its middle, keeping its head and its tail; get shows up to 200 characters so")
    func middleCut() {
        #expect(Format.middleCut("abcdefghij", limit: 5) == "ab…ij")
        #expect(Format.middleCut("abcdefghij", limit: 6) == "abc…ij")
        #expect(Format.middleCut("abcdefghij", limit: 10) == "abcdefghij")
        let argv = ["cc", "-O2", "-Wall", "-Wextra", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX", "-c", "lapi.c", "-o", "lapi.o"]
        let shown = Format.command(argv, limit: 40)
        #expect(shown.count == 40)
        #expect(shown == "cc -O2 -Wall -Wextra…-c lapi.c -o lapi.o")
    }
}
