import PromiseJSON

/// What the daemon kept of a step's output (docs/PROTOCOL.md, "Logs"): the
/// end of its stdout and of its stderr, and how much of each was cut from the front.
///
/// ```swift
/// let log = try await remote.logs("test/lib")
/// if log.stderrDropped > 0 { print("… \(log.stderrDropped) bytes cut") }
/// print(log.stderr, terminator: "")
/// ```
public struct PromiseLog: Sendable, Hashable {
    public var id: String
    /// The state of its promise when the log was read.
    public var state: PromiseRecord.State
    /// The kept end of stdout, as UTF-8 (invalid bytes as U+FFFD).
    public var stdout: String
    /// The kept end of stderr, as UTF-8 (invalid bytes as U+FFFD).
    public var stderr: String
    /// Every byte the stream had, kept or not.
    public var stdoutBytes: Int
    public var stderrBytes: Int
    /// Bytes cut from the front of the stream; 0 when all is kept.
    public var stdoutDropped: Int
    public var stderrDropped: Int
    /// The daemon's `maxLogBytes`: how much of each stream it keeps.
    public var limit: Int

    /// Reads a `logs` answer.
    /// - Throws: ``PromiseConnectionError`` (``PromiseConnectionError/Code/invalidResponse``)
    ///   when a member is missing.
    init(_ json: JSONValue) throws(PromiseConnectionError) {
        guard let id = json["id"]?.stringValue,
              let state = json["state"]?.stringValue.flatMap(PromiseRecord.State.init(rawValue:)),
              let stdout = json["stdout"]?.stringValue, let stderr = json["stderr"]?.stringValue,
              let stdoutBytes = json["stdoutBytes"]?.intValue, let stderrBytes = json["stderrBytes"]?.intValue,
              let stdoutDropped = json["stdoutDropped"]?.intValue, let stderrDropped = json["stderrDropped"]?.intValue,
              let limit = json["limit"]?.intValue
        else {
            throw PromiseConnectionError(.invalidResponse, "the daemon answered logs without every member: \(json)")
        }
        self.id = id
        self.state = state
        self.stdout = stdout
        self.stderr = stderr
        self.stdoutBytes = stdoutBytes
        self.stderrBytes = stderrBytes
        self.stdoutDropped = stdoutDropped
        self.stderrDropped = stderrDropped
        self.limit = limit
    }
}
