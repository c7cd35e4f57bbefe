import Foundation
import Testing

/// `get` piped prints one line, a multi-line reason included, as `wait` does.
@Suite("promisectl get: a multi-line reason")
struct PromiseCtlGetReasonTests {
    @Test("get piped prints a reason of three lines on one line, as wait's stderr does")
    func reasonOnOneLine() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "c")
            _ = try daemon.ctl("reject", "c", "a.c:1: error: x\na.c:2: error: y\n1 error generated.", "--code", "1")
            let got = try daemon.ctl("get", "c")
            #expect(got.status == 1, "\(got)")
            #expect(got.stdout == "rejected: a.c:1: error: x a.c:2: error: y 1 error generated. (code 1)\n")
            let waited = try daemon.ctl("wait", "c")
            #expect(waited.stderr == "promisectl: c failed: a.c:1: error: x a.c:2: error: y 1 error generated. (code 1)\n")
        }
    }
}
