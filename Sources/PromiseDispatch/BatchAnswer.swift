import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry

/// Collects the answers to one JSON-RPC batch and sends them as one array
/// once the last expected answer is in (a `wait` in a batch holds the whole
/// batch's answer back until it is answered). Loop thread only.
///
/// The array is bounded by `maxBytes` (`maxBatchAnswerBytes`): each member
/// answer is measured as it comes, and one that would take the array past
/// the bound is replaced by a short -32004 error answer (about 150 bytes
/// and the request's id). Replacements are counted like answers, so the
/// answers after one see that much less room, and they alone may take the
/// array past the bound (PROTOCOL.md: "on top of the bound"). Every answer is bounded
/// alone (values, reasons, records), but a thousand of them together are
/// not: a batch of 1,000 `get`s of one 16 MiB value would make a 16 GB line.
final class BatchAnswer {
    private var answers: [OutgoingMessage?]
    private var expected: Set<Int> = []
    private var closed = false
    private let send: ([OutgoingMessage]) -> Void
    private let maxBytes: Int
    /// Bytes of the array so far: its brackets, the answers admitted and their commas.
    private var bytes = 2

    /// - Parameters:
    ///   - count: Members in the batch.
    ///   - maxBytes: Bytes of JSON text the array may take.
    ///   - send: Takes the answers, in member order, once all are in.
    init(count: Int, maxBytes: Int, send: @escaping ([OutgoingMessage]) -> Void) {
        answers = Array(repeating: nil, count: count)
        self.maxBytes = maxBytes
        self.send = send
    }

    /// Bytes the answers still to come may take together.
    var remainingBytes: Int { max(0, maxBytes - bytes) }

    /// Member `index` will be answered.
    func expect(_ index: Int) {
        expected.insert(index)
    }

    /// The answer to member `index`, or the error that replaces it when it
    /// does not fit.
    func fill(_ index: Int, _ answer: OutgoingMessage) {
        // Each answer but the first also takes a comma: counted for all, the
        // bound is kept with a byte to spare.
        // Written first, then measured: a result (a `list` page) is made to
        // fit the room left, so writing it is the one pass over it.
        let remaining = remainingBytes
        let written = answer.writingResult()
        let size = written.byteCount(upTo: remaining) + 1
        if size <= remaining {
            answers[index] = written
            bytes += size
        } else {
            let replacement = answer.replaced(by: Self.tooLarge(maxBytes))
            answers[index] = replacement
            bytes += replacement.byteCount(upTo: .max) + 1
        }
        finishIfComplete()
    }

    /// The error that replaces an answer past `maxBytes`. The request was
    /// carried out: only its answer is left out.
    static func tooLarge(_ maxBytes: Int) -> RPCError {
        RPCError(
            .limitExceeded,
            "batch answer past \(maxBytes) bytes: request done, answer left out",
            data: ["limit": "maxBatchAnswerBytes", "value": .int(maxBytes)])
    }

    /// Every member has been run: from now on the last answer sends the batch.
    /// A batch of notifications only is never answered.
    func close() {
        closed = true
        finishIfComplete()
    }

    private func finishIfComplete() {
        guard closed, !expected.isEmpty, expected.allSatisfy({ answers[$0] != nil }) else { return }
        let complete = expected.sorted().compactMap { answers[$0] }
        expected = []
        send(complete)
    }
}

@available(*, unavailable)
extension BatchAnswer: Sendable {}
