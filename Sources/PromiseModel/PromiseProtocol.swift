/// Versions reported by `info`.
///
/// ```swift
/// client.call("info")["protocol"]   // .int(PromiseProtocol.version)
/// ```
public enum PromiseProtocol {
    /// The protocol revision: bumped only for changes that break clients
    /// (method, param, field and error names are pinned; additions do not bump it).
    public static let version = 1
    /// The daemon's own version.
    public static let daemonVersion = "0.1.0"
}
