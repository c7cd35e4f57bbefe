/// The output a step kept (``StepLog``), as a store keeps it beside its
/// promise: the last bytes of its stdout and stderr, and how many bytes
/// before them were cut off. Keyed, like the promise, by its sequence: a
/// deleted promise's log goes with it (docs/DURABILITY.md, "Logs").
///
/// ```swift
/// let log = StoredStepLog(id: "build", sequence: 7, stdout: Array("ok\n".utf8), stderr: [])
/// try store.commit(StoreBatch(logs: [log]))
/// ```
public struct StoredStepLog: Sendable, Hashable {
    public var id: String
    public var sequence: Int
    /// Raw bytes, as the step wrote them (not necessarily UTF-8).
    public var stdout: [UInt8]
    public var stderr: [UInt8]
    /// Bytes of each stream before the kept ones.
    public var stdoutDropped: Int
    public var stderrDropped: Int

    public init(id: String, sequence: Int, stdout: [UInt8], stderr: [UInt8],
                stdoutDropped: Int = 0, stderrDropped: Int = 0) {
        self.id = id
        self.sequence = sequence
        self.stdout = stdout
        self.stderr = stderr
        self.stdoutDropped = stdoutDropped
        self.stderrDropped = stderrDropped
    }
}
