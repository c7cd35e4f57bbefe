import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whether a stream gets the output made for people (tables, one line per
/// event, a progress bar) or the output made for scripts.
///
/// People read a terminal; scripts read pipes and files, and get what they
/// always got. `PROMISECTL_TTY=1` treats every stream as a terminal and
/// `PROMISECTL_TTY=0` none (for tests, and for a terminal recorded to a file).
enum Terminal {
    /// The descriptor is a terminal, or `PROMISECTL_TTY` says to act as if.
    /// (Read with `getenv`: `ProcessInfo`'s environment copies all of it first.)
    static func isTerminal(_ descriptor: Int32) -> Bool {
        isTerminal(descriptor, override: getenv("PROMISECTL_TTY").map { String(cString: $0) })
    }

    /// As ``isTerminal(_:)``, with `PROMISECTL_TTY` taken from `environment`.
    static func isTerminal(_ descriptor: Int32, environment: [String: String]) -> Bool {
        isTerminal(descriptor, override: environment["PROMISECTL_TTY"])
    }

    private static func isTerminal(_ descriptor: Int32, override: String?) -> Bool {
        switch override {
        case "1": true
        case "0": false
        default: isatty(descriptor) == 1
        }
    }

    static var standardOutputIsTerminal: Bool { isTerminal(STDOUT_FILENO) }
    static var standardErrorIsTerminal: Bool { isTerminal(STDERR_FILENO) }

    /// Milliseconds since 1970, the daemon's unit for times.
    static func nowMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }
}
