extension DaemonLimits {
    /// Whether `name` may name a pool (``pools``, `pool.set`): 1 to
    /// ``maxPoolNameBytes`` bytes of ASCII letters, digits, `.`, `_` and `-`.
    ///
    /// ```swift
    /// DaemonLimits.isValidPoolName("cc")       // true
    /// DaemonLimits.isValidPoolName("c c")      // false
    /// ```
    public static func isValidPoolName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= maxPoolNameBytes else { return false }
        return bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// The longest pool name, in bytes.
    package static let maxPoolNameBytes = 64

    /// The largest limit a pool takes.
    public static let maxPoolLimit = 65_536

    /// The pool of steps that name none, whose limit is ``maxRunningProcesses``.
    public static let defaultPoolName = "default"
}
