import Foundation
import Testing
@testable import promisectl
#if canImport(Glibc)
import Glibc
#endif

/// `then` sends this shell's environment, read from `environ` by hand.
@Suite("promisectl's environment reading")
struct ProcessEnvironmentTests {
    @Test("the variables read from environ are those ProcessInfo reads, odd values included")
    func variablesMatchProcessInfo() {
        let odd: [(String, [UInt8])] = [
            ("PT_ENV_EQUALS", Array("a=b=c".utf8)), ("PT_ENV_EMPTY", []), ("PT_ENV_UNICODE", Array("héllo ✓".utf8)),
            ("PT_ENV_BAD_UTF8", [0x61, 0xFF, 0xFE, 0x62]),
        ]
        for (name, value) in odd { setenv(name, String(cString: (value + [0]).map { CChar(bitPattern: $0) }), 1) }
        defer { for (name, _) in odd { unsetenv(name) } }
        let read = ProcessEnvironment.variables()
        #expect(read == ProcessInfo.processInfo.environment)
        #expect(read["PT_ENV_EQUALS"] == "a=b=c")
        #expect(read["PT_ENV_EMPTY"] == "")
        #expect(read["PT_ENV_UNICODE"] == "héllo ✓")
    }
}
