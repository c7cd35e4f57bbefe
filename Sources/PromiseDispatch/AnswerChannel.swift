import PromiseJSON
import PromiseRPC
import PromiseRegistry

/// Where the answers to one request go: its connection, or the answer of
/// the batch it came in.
///
/// A protocol rather than a closure: the dispatcher's channels are small
/// structs, held in `any AnswerChannel` without an allocation, where a
/// closure capturing the same things costs two per request (its context,
/// and a box for its weak reference).
protocol AnswerChannel {
    func send(_ message: OutgoingMessage)
    /// Sends the answer to request `id` whose result `writeResult` appends
    /// as JSON text: `send(.recordResult(id:_:))`, unless the channel can
    /// hand the text on without keeping it (see `Dispatcher.ConnectionAnswers`).
    func sendRecordResult(id: JSONValue, _ writeResult: (inout JSONTextBuffer) -> Void)
    /// Bytes an answer may still take here, when the channel bounds them
    /// (a batch member's); nil when it does not.
    var remainingBytes: Int? { get }
}

extension AnswerChannel {
    var remainingBytes: Int? { nil }

    func sendRecordResult(id: JSONValue, _ writeResult: (inout JSONTextBuffer) -> Void) {
        send(.recordResult(id: id, writeResult))
    }
}
