/// The engine behind every combinator: watches several inputs and settles
/// one output from their results.
///
/// The output is a consumer of each input: it counts as a child in the
/// "every child cancelled" rule, so cancelling it cancels inputs that have
/// no other consumer. A cancelled input, however, reaches the output as a
/// plain rejection: `allSettled` records it, `all` fails with it. The
/// output's progress is the mean of the inputs'.
///
/// Inlinable, like the combinators that use it, so that it is specialised
/// for the caller's value type: run generically it looks up type metadata
/// several times per input, which makes `all` several times slower
/// (docs/PERFORMANCE.md).
@usableFromInline
final class _Gather<Input: Sendable, Output: Sendable>: Sendable {
    /// Decides, after each input settles, whether the output is settled.
    /// Called under the gather's lock, in the order inputs settle.
    @usableFromInline
    typealias Decide = @Sendable (_ index: Int, _ result: Result<Input, any Error>, _ state: inout State)
        -> Result<Output, any Error>?

    @usableFromInline
    struct State: Sendable {
        @usableFromInline var results: [Result<Input, any Error>?]
        @usableFromInline var remaining: Int
        @usableFromInline var progress: [Double]
        @usableFromInline var progressSum: Double = 0
        @usableFromInline var done = false

        @inlinable
        init(count: Int) {
            results = Array(repeating: nil, count: count)
            remaining = count
            progress = Array(repeating: 0, count: count)
        }
    }

    @usableFromInline let state: _Locked<State>
    @usableFromInline let output: Promise<Output>
    @usableFromInline let decide: Decide
    /// For the cycle check (see `_CombinedInputs`).
    @usableFromInline let inputs: [Promise<Input>]

    @inlinable
    init(inputs: [Promise<Input>], output: Promise<Output>, decide: @escaping Decide) {
        state = _Locked(State(count: inputs.count))
        self.output = output
        self.decide = decide
        self.inputs = inputs
    }

    /// Watches `inputs`; returns the output promise.
    @inlinable
    static func combine(_ inputs: [Promise<Input>], decide: @escaping Decide) -> Promise<Output> {
        let output = Promise<Output>()
        let gather = _Gather(inputs: inputs, output: output, decide: decide)
        gather.watchedBy(output)
        // When the output is cancelled, each input loses a consumer (and is
        // cancelled if that was its last).
        // Its handlers, registered with the gather as their key, are
        // withdrawn from inputs that stay pending.
        // Queued rather than done here: an input may be the output of
        // another combinator, whose cancel would tell its own inputs, one
        // call deeper per link of a chain of combinators.
        output._register(_Callback(follower: nil) { _, cancelled, work in
            guard cancelled else { return }
            work.push(_InputsCancellation(inputs, key: gather))
        }, isChild: false)
        for (index, input) in inputs.enumerated() {
            // A consumer: counts as a child for upward cancellation, but sees
            // a cancelled input as a plain rejection.
            input._register(_Callback(follower: gather) { result, _, work in
                gather.record(index, result._result(Input.self), &work)
            }, isChild: true)
            input.onProgress(on: .inline) { fraction in gather.progressed(index, fraction) }
        }
        return output
    }

    /// Records an input's outcome and settles the output once `decide`
    /// says so, through `work`: the output's handlers run nested only up
    /// to the worklist's depth, so a chain of combinators of any length
    /// settles without exhausting the stack.
    @inlinable
    func record(_ index: Int, _ result: Result<Input, any Error>, _ work: inout _Worklist) {
        let decision = state.withLock { state -> Result<Output, any Error>? in
            guard !state.done else { return nil }
            state.results[index] = result
            state.remaining -= 1
            let decision = decide(index, result, &state)
            if decision != nil { state.done = true }
            return decision
        }
        guard let decision else { return }
        output._settle(decision, &work)
    }

    @inlinable
    func progressed(_ index: Int, _ fraction: Double) {
        let mean = state.withLock { state -> Double in
            state.progressSum += fraction - state.progress[index]
            state.progress[index] = fraction
            return state.progressSum / Double(state.progress.count)
        }
        let output = output
        _ProgressRelay.run { output.reportProgress(mean) }
    }
}


extension _Gather: _CombinedInputs {
    @usableFromInline
    var _cycleInputs: [any _PromiseNode] {
        inputs.map { $0 }
    }
}
