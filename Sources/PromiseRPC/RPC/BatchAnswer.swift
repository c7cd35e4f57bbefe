/// Collects the answers to one JSON-RPC batch and sends them as one array
/// once the last expected answer is in (a `wait` in a batch holds the whole
/// batch's answer back until it is answered). Loop thread only.
final class BatchAnswer {
    private var answers: [OutgoingMessage?]
    private var expected: Set<Int> = []
    private var closed = false
    private let send: ([OutgoingMessage]) -> Void

    /// - Parameters:
    ///   - count: Members in the batch.
    ///   - send: Takes the answers, in member order, once all are in.
    init(count: Int, send: @escaping ([OutgoingMessage]) -> Void) {
        answers = Array(repeating: nil, count: count)
        self.send = send
    }

    /// Member `index` will be answered.
    func expect(_ index: Int) {
        expected.insert(index)
    }

    /// The answer to member `index`.
    func fill(_ index: Int, _ answer: OutgoingMessage) {
        answers[index] = answer
        finishIfComplete()
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
