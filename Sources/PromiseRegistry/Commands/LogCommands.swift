import PromiseModel

/// `log`: adds output to a pending promise's log (`promisectl run` sends
/// its command's output this way).
struct LogCommand {
    var id: String
    var stream: StepStream
    var data: String
    /// Bytes of the stream lost before `data`.
    var skipped: Int
}

/// `logs`: the log of a promise; with `follow`, its chunks to come as events.
struct LogsQuery {
    var id: String
    var follow: Bool
}
