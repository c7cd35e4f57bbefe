import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A fresh folder under /tmp, removed when this is released.
final class E2ETemporaryFolder {
    let path: String

    init() throws {
        var template = Array("/tmp/plim-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw E2EHarnessError("mkdtemp failed") }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
