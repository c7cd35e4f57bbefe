/// A cancelled combinator output telling each of its inputs that it lost a
/// consumer (and cancelling those left with none), queued on a `_Worklist`.
///
/// Run by the worklist's drain rather than where the output was cancelled:
/// an input cancelled this way may itself be a combinator output, which
/// queues its own inputs in turn, so a chain of combinators of any length is
/// cancelled upwards in a loop, at a constant depth of the stack.
@usableFromInline
final class _InputsCancellation<Input: Sendable>: _PendingWork, Sendable {
    @usableFromInline let inputs: [Promise<Input>]
    /// What the output's handlers on the inputs are registered with.
    @usableFromInline let key: any AnyObject & Sendable
    /// The first input not told yet: a drain whose ``DrainBudget`` is spent
    /// queues the rest as a cancellation from there.
    @usableFromInline let start: Int

    @inlinable
    init(_ inputs: [Promise<Input>], key: any AnyObject & Sendable, start: Int = 0) {
        self.inputs = inputs
        self.key = key
        self.start = start
    }

    @inlinable
    func _runPendingCallbacks(_ work: inout _Worklist) {
        for index in start..<inputs.count {
            if work.yields() {
                return work.push(_InputsCancellation(inputs, key: key, start: index))
            }
            _cancelUpwards(from: _UpwardStep(parent: inputs[index], child: key), &work)
        }
    }
}
