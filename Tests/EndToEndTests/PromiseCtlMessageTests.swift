import Foundation
import Testing

/// promisectl's messages name promisectl's commands and the way out, not
/// JSON-RPC methods and error codes.
@Suite("promisectl messages in its own terms")
struct PromiseCtlMessageTests {
    @Test("a then --pool naming no pool says to make it with promisectl pool, without an error code")
    func unknownPoolNamesTheCommand() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "p")
            let result = try daemon.ctl("then", "p", "--id", "c", "--pool", "cc", "--", "true")
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr == """
                promisectl: no pool named "cc": start promised with --pool cc=N, or make it with promisectl pool cc N

                """)
        }
    }

    @Test("a value over the line limit says to keep big values in a file, and no message shows a JSON-RPC code")
    func lineLimitSaysTheWayOut() throws {
        try E2EDaemon.with(extraArguments: ["--max-line-bytes", "4096", "--max-promises", "2"]) { daemon in
            _ = try daemon.ctl("create", "big")
            let result = try daemon.ctl("resolve", "big", String(repeating: "7", count: 5_000))
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.hasSuffix("; keep big values in a file and pass its path\n"), "\(result)")
            _ = try daemon.ctl("create", "second")
            let full = try daemon.ctl("create", "third")
            #expect(full.status != 0)
            #expect(full.stderr == """
                promisectl: too many promises (limit 2); drop settled ones with promisectl forget ID… or forget --prefix P

                """)
            for output in [result.stderr, full.stderr] { #expect(!output.contains("(error -32"), "\(output)") }
        }
    }
}
