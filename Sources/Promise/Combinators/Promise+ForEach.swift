extension Promise {
    /// Runs `body` for each element, at most `maxConcurrent` at a time
    /// (1: one after another), and fulfils with the results in element order.
    ///
    /// The first failure rejects the returned promise, starts no more
    /// elements and cancels those in flight. Progress is the fraction of
    /// elements done. Cancelling the returned promise cancels those in flight.
    /// An element's promise that other code also consumes (a `then` on it,
    /// or another combinator) is not cancelled: this loop only gives it up,
    /// as ``all(_:)`` does with its inputs.
    ///
    /// ```swift
    /// // Upload files four at a time.
    /// let receipts = Promise.forEach(files, maxConcurrent: 4) { file in upload(file) }
    /// ```
    ///
    /// - Parameters:
    ///   - elements: The inputs, read once up front.
    ///   - maxConcurrent: How many `body` promises may be pending at once; at least 1.
    ///   - executor: Where `body` runs.
    public static func forEach<S: Sequence>(
        _ elements: S,
        maxConcurrent: Int = 1,
        on executor: some Executor = .default,
        _ body: @escaping @Sendable (S.Element) throws -> Promise<Value>
    ) -> Promise<[Value]> where S.Element: Sendable {
        let items = Array(elements)
        guard !items.isEmpty else { return Promise<[Value]>(value: []) }
        let output = Promise<[Value]>()
        let run = _ForEach(items: items, output: output, executor: executor, body: body)
        output.onCancel(on: .inline) { run.cancelInFlight() }
        for _ in 0..<min(max(maxConcurrent, 1), items.count) {
            run.startNext()
        }
        return output
    }
}

/// One `forEach` run: which element is next, results, and what is in flight.
final class _ForEach<Element: Sendable, Value: Sendable, E: Executor>: Sendable {
    private struct State: Sendable {
        var next = 0
        var done = 0
        var results: [Value?]
    }

    private let items: [Element]
    private let output: Promise<[Value]>
    private let executor: E
    private let body: @Sendable (Element) throws -> Promise<Value>
    private let state: _Locked<State>
    private let inFlight = _ConsumedInputs<Value>()

    init(items: [Element], output: Promise<[Value]>, executor: E,
         body: @escaping @Sendable (Element) throws -> Promise<Value>) {
        self.items = items
        self.output = output
        self.executor = executor
        self.body = body
        state = _Locked(State(results: Array(repeating: nil, count: items.count)))
        inFlight.watchedBy(output)
    }

    /// Runs `body` for the next unclaimed elements, one at a time: while
    /// the promises it returns are already settled, in this loop (no
    /// recursion); otherwise once the pending one settles.
    func startNext() {
        executor.execute { [self] in
            while output.isPending, let index = claim() {
                let promise: Promise<Value>
                do {
                    promise = try body(items[index])
                } catch {
                    fail(error)
                    return
                }
                guard let result = promise.result else {
                    // Consumed as a child, so that stopping cancels it only
                    // if nothing else waits on it; a stop that came while
                    // `body` ran is seen here.
                    let handler = _Callback(follower: self) { [self] result, _, _ in
                        inFlight.settled(at: index)
                        if finished(index, result._result(Value.self)) { startNext() }
                    }
                    let consumed = inFlight.consume(promise, at: index, key: self, output: output, handler)
                    if !consumed { fail(PromiseError.cycle) }
                    return
                }
                guard finished(index, result) else { return }
            }
        }
    }

    private func claim() -> Int? {
        state.withLock { state -> Int? in
            guard state.next < items.count else { return nil }
            defer { state.next += 1 }
            return state.next
        }
    }

    /// Records an element's outcome; false when no more should start.
    private func finished(_ index: Int, _ result: Result<Value, any Error>) -> Bool {
        guard case .success(let value) = result else {
            if case .failure(let error) = result { fail(error) }
            return false
        }
        let (done, results) = state.withLock { state -> (Int, [Value?]?) in
            state.results[index] = value
            state.done += 1
            return (state.done, state.done == items.count ? state.results : nil)
        }
        if let results {
            output.fulfill(results.map { $0! })
            return false
        }
        output.reportProgress(Double(done) / Double(items.count))
        return true
    }

    private func fail(_ error: any Error) {
        guard output.reject(error) else { return }
        cancelInFlight()
    }

    /// Starts no more elements and gives up those in flight, cancelling
    /// the ones nothing else consumes.
    func cancelInFlight() {
        state.withLock { $0.next = items.count }
        inFlight.stop(key: self)
    }
}
