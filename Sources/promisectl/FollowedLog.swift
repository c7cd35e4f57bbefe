import PromiseJSON
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// What `promisectl logs` has printed of a step's two streams, as byte
/// offsets in each stream (docs/PROTOCOL.md, "Logs": a notification's
/// `offset`, an answer's `…Dropped`), so that the log asked for again after
/// a reconnection is printed from where it stopped: no byte twice, none the
/// daemon kept left out, and a note on stderr for those it no longer has.
///
/// Offsets count bytes as the daemon holds them, and the text is those bytes
/// decoded as UTF-8: its UTF-8 is the stream's bytes wherever they were
/// valid UTF-8 (a `promisectl run` step's always are: it sends them decoded),
/// and longer where they were not (U+FFFD is three bytes). So positions are
/// trusted only where needed: within one connection the daemon's chunks
/// follow each other and are printed whole, each `offset` putting the count
/// right; only a log asked for again, and the notifications that may repeat
/// part of it, are cut by position.
struct FollowedLog {
    let id: String
    /// The end of what was printed of each stream; nil before the first answer.
    private var printed: [StepStream: Int]?
    /// Streams asked for again whose notifications may start before the end
    /// of what was printed (a restarted daemon that lost the end of a
    /// step's log gets it again from `promisectl run`).
    private var catchingUp: Set<StepStream> = []
    /// `maxLogBytes`, as the last answer said, for the notes.
    private var limit = 0

    init(id: String) {
        self.id = id
    }

    /// Whether an answer was printed: the promise was found.
    var started: Bool { printed != nil }

    /// Prints a `logs` answer: the notes about cut streams, then the stdout
    /// part, then the stderr part; of each, only what comes after what was printed.
    mutating func print(_ answer: JSONValue) {
        limit = answer["limit"]?.intValue ?? limit
        let askedAgain = printed != nil
        var parts: [(stream: StepStream, bytes: ArraySlice<UInt8>)] = []
        for stream in StepStream.allCases {
            let dropped = max(0, answer[stream.rawValue + "Dropped"]?.intValue ?? 0)
            let kept = Array((answer[stream.rawValue]?.stringValue ?? "").utf8)
            let done = printed?[stream] ?? 0
            if dropped > done { noteCut(stream, from: done, to: dropped) }
            parts.append((stream, kept.dropFirst(max(0, done - dropped))))
            if askedAgain { catchingUp.insert(stream) }
            // Never back: a restarted daemon may have less than was printed, and send the rest again.
            printed = (printed ?? [:]).merging([stream: dropped + kept.count], uniquingKeysWith: max)
        }
        for part in parts { Self.write(part.bytes, part.stream) }
    }

    /// Prints a `log` notification's data from where printing stopped.
    mutating func print(notification params: JSONValue) {
        let stream = params["stream"]?.stringValue.flatMap(StepStream.init(rawValue:)) ?? .stdout
        let data = Array((params["data"]?.stringValue ?? "").utf8)
        let done = printed?[stream] ?? 0
        let offset = params["offset"]?.intValue ?? done
        if offset > done { noteCut(stream, from: done, to: offset) }
        guard catchingUp.contains(stream) else {
            Self.write(data[...], stream)
            printed?[stream] = offset + data.count
            return
        }
        Self.write(data.dropFirst(max(0, done - offset)), stream)
        if offset + data.count >= done { catchingUp.remove(stream) }
        printed?[stream] = max(done, offset + data.count)
    }

    /// Says on stderr that bytes `from..<to` of `stream` are not there to print.
    private func noteCut(_ stream: StepStream, from: Int, to: Int) {
        let which = from == 0 ? "the first \(to) bytes" : "\(to - from) bytes after the first \(from)"
        Failure.report("\(stream.rawValue) of \(id): \(which) were cut (the daemon keeps "
                       + "the last \(limit) bytes of each stream; promised --max-log-bytes sets it)")
    }

    private static func write(_ bytes: ArraySlice<UInt8>, _ stream: StepStream) {
        guard !bytes.isEmpty else { return }
        Output.write(String(decoding: bytes, as: UTF8.self), to: stream == .stderr ? STDERR_FILENO : STDOUT_FILENO)
    }
}
