import PromiseModel

/// The bytes each stream of a step's log has had, as `log` answers.
struct LogTotals: Hashable {
    var stdoutBytes: Int
    var stderrBytes: Int
}

/// A promise's log, as `logs` answers: the kept output of each stream as
/// text (invalid UTF-8 replaced by U+FFFD), and how much of it was cut.
struct LogSnapshot: Hashable {
    /// One stream's part of the log.
    struct Stream: Hashable {
        var text: String
        /// Bytes cut from the front.
        var dropped: Int
        /// Every byte the stream had.
        var total: Int
    }

    var id: String
    var state: String
    var stdout: Stream
    var stderr: Stream
    /// The most bytes kept per stream.
    var limit: Int

    subscript(stream: StepStream) -> Stream {
        switch stream {
        case .stdout: stdout
        case .stderr: stderr
        }
    }
}
