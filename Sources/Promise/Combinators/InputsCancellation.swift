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

    @inlinable
    init(_ inputs: [Promise<Input>], key: any AnyObject & Sendable) {
        self.inputs = inputs
        self.key = key
    }

    /// Ends in the turn that cancelled the output, even under a spent
    /// ``DrainBudget``: a restart re-derives a settled parent's children,
    /// but not an input cancelled because its last consumer was, so the
    /// input's cancel is stored with the output's.
    @inlinable
    var _endsInThisTurn: Bool { true }

    @inlinable
    func _runPendingCallbacks(_ work: inout _Worklist) {
        for input in inputs {
            _cancelUpwards(from: _UpwardStep(parent: input, child: key), &work)
        }
    }
}
