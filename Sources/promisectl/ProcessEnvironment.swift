#if canImport(Glibc)
import Glibc
#endif

/// This process's environment variables, read from `environ` as
/// `ProcessInfo.processInfo.environment` reads them (each entry split at its
/// first `=`, entries without one left out, a later duplicate winning),
/// without its cost: it finds the `=` by comparing Characters, which with its
/// set-up is a large part of a short call (docs/PERFORMANCE.md).
///
/// ```swift
/// let variables = ProcessEnvironment.variables()  // ["PATH": "/usr/bin:/bin", …]
/// ```
enum ProcessEnvironment {
    static func variables() -> [String: String] {
        var variables: [String: String] = [:]
        // Never null here: promisectl does not call clearenv(3).
        var entry: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = environ
        while let text = entry.pointee {
            let length = strlen(text)
            text.withMemoryRebound(to: UInt8.self, capacity: length) { start in
                let bytes = UnsafeBufferPointer(start: start, count: length)
                guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else { return }
                variables[String(decoding: bytes[..<equals], as: UTF8.self)] =
                    String(decoding: bytes[(equals + 1)...], as: UTF8.self)
            }
            entry += 1
        }
        return variables
    }
}
