import PromiseModel

/// `log`: adds output to a pending promise's log (`promisectl run` sends
/// its command's output this way).
package struct LogCommand {
    package var id: String
    package var stream: StepStream
    package var data: String
    /// Bytes of the stream lost before `data`.
    package var skipped: Int

    package init(id: String, stream: StepStream, data: String, skipped: Int) {
        self.id = id
        self.stream = stream
        self.data = data
        self.skipped = skipped
    }
}

/// `logs`: the log of a promise; with `follow`, its chunks to come as events.
package struct LogsQuery {
    package var id: String
    package var follow: Bool

    package init(id: String, follow: Bool) {
        self.id = id
        self.follow = follow
    }
}
