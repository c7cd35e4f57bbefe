import PromiseModel

/// The bytes each stream of a step's log has had, as `log` answers.
package struct LogTotals: Hashable {
    package var stdoutBytes: Int
    package var stderrBytes: Int
}

/// A promise's log, as `logs` answers: the kept output of each stream as
/// text (invalid UTF-8 replaced by U+FFFD), and how much of it was cut.
package struct LogSnapshot: Hashable {
    /// One stream's part of the log.
    package struct Stream: Hashable {
        package var text: String
        /// Bytes cut from the front.
        package var dropped: Int
        /// Every byte the stream had.
        package var total: Int
    }

    package var id: String
    package var state: String
    package var stdout: Stream
    package var stderr: Stream
    /// The most bytes kept per stream.
    package var limit: Int

    package subscript(stream: StepStream) -> Stream {
        switch stream {
        case .stdout: stdout
        case .stderr: stderr
        }
    }
}
