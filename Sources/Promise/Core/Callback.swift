/// One handler waiting on a promise: a `then`, `recover`, `always`,
/// `onCancel`, an adoption, or an internal observer.
///
/// A handler is a closure made inside the (specialised) operator that
/// registered it, so it runs fully specialised code. Two alternatives were
/// measured and rejected: handler structs stored as `any _Callback<Value>`
/// (a parameterised existential looks up metadata on every use) and as a
/// plain protocol existential (calls go through the generic witness and run
/// unspecialised code) — each cost several times a whole `then` + `fulfill`.
///
/// The closure receives a pointer to the promise's `Result<Value, any
/// Error>`: handlers are only ever registered by `Promise<Value>` on itself,
/// so the pointee always has the type the handler was made for.
@usableFromInline
struct _Callback: Sendable {
    @usableFromInline
    let run: @Sendable (_ result: UnsafeRawPointer, _ cancelled: Bool, _ work: inout _Worklist) -> Void

    /// The child promise this handler settles, if any, for progress.
    @usableFromInline
    let follower: (any _PromiseNode)?

    @inlinable
    init(follower: (any _PromiseNode)?,
         _ run: @escaping @Sendable (_ result: UnsafeRawPointer, _ cancelled: Bool, _ work: inout _Worklist) -> Void) {
        self.follower = follower
        self.run = run
    }
}

extension UnsafeRawPointer {
    /// The result a `_Callback` is called with.
    @inlinable
    func _result<Value: Sendable>(_: Value.Type) -> Result<Value, any Error> {
        assumingMemoryBound(to: Result<Value, any Error>.self).pointee
    }
}

/// Promises settled but whose handlers have not run yet.
///
/// An `.inline` child's handlers run nested inside its parent's, which is
/// fastest (the typed result is at hand), but would recurse once per link
/// and overflow the stack on long chains. So nesting stops at
/// `maximumDepth`: deeper children are queued here and the outermost settle
/// runs the queue in a loop. The first entry is inline, so a straight chain
/// allocates nothing.
@usableFromInline
struct _Worklist {
    /// Nested settles allowed before queueing: a few kilobytes of stack.
    @usableFromInline static var maximumDepth: Int { 32 }

    @usableFromInline var depth = 0
    @usableFromInline var next: (any _PromiseNode)?
    @usableFromInline var more: [any _PromiseNode] = []

    @inlinable
    init() {}

    @inlinable
    mutating func push(_ node: any _PromiseNode) {
        if next == nil {
            next = node
        } else {
            more.append(node)
        }
    }

    /// Runs queued promises' handlers until none are left.
    @inlinable
    mutating func drain() {
        while true {
            if let node = next {
                next = nil
                node._runPendingCallbacks(&self)
            } else if let node = more.popLast() {
                node._runPendingCallbacks(&self)
            } else {
                return
            }
        }
    }
}

/// A promise of any value type, as its relatives see it.
@usableFromInline
protocol _PromiseNode: AnyObject, Sendable {
    /// Runs the handlers of a promise settled through `_Worklist`.
    func _runPendingCallbacks(_ work: inout _Worklist)
    /// Cancels this promise because an ancestor was cancelled.
    func _cancelFromAncestor(_ work: inout _Worklist)
    /// One child was cancelled. When that was the last uncancelled child,
    /// cancels this promise too and returns its parent, to go on upwards.
    func _childCancelled(_ work: inout _Worklist) -> (any _PromiseNode)?
    /// The promise this one waits on, while pending.
    var _upstream: (any _PromiseNode)? { get }
    /// The next promise for the cycle check (`_upstream`, or further up
    /// through `cycleHint`), and whether this one is locked in.
    var _cycleStep: (next: (any _PromiseNode)?, lockedIn: Bool) { get }
    /// Records a far ancestor for the cycle check (see `cycleHint`).
    func _setCycleHint(_ ancestor: any _PromiseNode)
    /// Follows an ancestor's progress; returns the promises to pass it on to.
    func _followProgress(_ fraction: Double) -> [any _PromiseNode]
    /// One line for `debugDescription`.
    var _summary: String { get }
}
