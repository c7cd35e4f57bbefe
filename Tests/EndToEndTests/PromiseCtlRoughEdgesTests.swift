import Foundation
import PromiseRPC
import Testing

/// The rough edges of issue 21 (section 4), each with the built `promised`
/// and `promisectl`: what a user sees and the exit status.
@Suite("promisectl and promised rough edges")
struct PromiseCtlRoughEdgesTests {
    @Test("a value over the line limit exits 64 with the limit and --max-line-bytes named; the promise stays pending")
    func resolveOverLineLimitExits64NamingTheFlag() throws {
        try E2EDaemon.with(extraArguments: ["--max-line-bytes", "4096"]) { daemon in
            _ = try daemon.ctl("create", "big")
            let result = try daemon.ctl("resolve", "big", "-", "--string", stdin: String(repeating: "a", count: 10_000))
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr == """
                promisectl: line too long: more than 4096 bytes (the daemon's maxLineBytes; \
                promised --max-line-bytes sets it) (error -32004)

                """)
            #expect(try daemon.ctl("get", "big").stdout == "pending\n")
        }
    }
}
