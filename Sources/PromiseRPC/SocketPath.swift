import Foundation

/// Where the daemon listens and where clients look for it.
///
/// In order: the explicit path (`--socket`), `$PROMISED_SOCKET`,
/// `$XDG_RUNTIME_DIR/promised.sock`, else `promised.sock` in a folder of the
/// user's own under the temp folder (`$TMPDIR`, else `/tmp`):
/// `/tmp/promised-<uid>/promised.sock`. Empty values count as unset.
///
/// ```swift
/// let path = SocketPath.resolve(explicit: options.socket)
/// ```
public enum SocketPath {
    /// The file name used inside `$XDG_RUNTIME_DIR` and the per-user folder.
    public static let fileName = "promised.sock"

    /// The socket path to use, following the order above, with the
    /// variables of this process's environment.
    ///
    /// Reads the three variables with `getenv`: `ProcessInfo.processInfo.environment`
    /// copies the whole environment into a dictionary first
    /// (docs/PERFORMANCE.md).
    public static func resolve(explicit: String?) -> String {
        resolve(explicit: explicit) { name in getenv(name).map { String(cString: $0) } }
    }

    /// The socket path to use, following the order above, with the variables of `environment`.
    public static func resolve(explicit: String?, environment: [String: String]) -> String {
        resolve(explicit: explicit) { environment[$0] }
    }

    private static func resolve(explicit: String?, variable: (String) -> String?) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let path = variable("PROMISED_SOCKET"), !path.isEmpty { return path }
        if let runtime = variable("XDG_RUNTIME_DIR"), !runtime.isEmpty {
            return join(runtime, fileName)
        }
        var temporary = variable("TMPDIR") ?? ""
        if temporary.isEmpty { temporary = "/tmp" }
        return join(join(temporary, "promised-\(getuid())"), fileName)
    }

    private static func join(_ folder: String, _ name: String) -> String {
        folder.hasSuffix("/") ? folder + name : folder + "/" + name
    }
}
