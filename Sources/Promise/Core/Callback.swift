/// One handler waiting on a promise: a `then`, `recover`, `always`,
/// `onCancel`, an adoption, or an internal observer.
///
/// A handler runs code made inside the (specialised) operator that
/// registered it, so it runs fully specialised code. Handler structs stored
/// as `any _Callback<Value>` (a parameterised existential looks up metadata
/// on every use) or as a plain protocol existential (calls go through the
/// generic witness and run unspecialised code) are slower by several times
/// a whole `then` + `fulfill` (docs/PERFORMANCE.md).
///
/// `invoke` is that code. It captures nothing: what it works on — the child
/// promise it settles (`follower`) and the user's closure (`body`) — is
/// stored beside it and handed back to it. A closure capturing child and
/// body would need a heap context, one allocation per `then` on top of the
/// child itself (swift-nio's `map` makes that allocation), and a `then`
/// would cost three allocations instead of two.
///
/// `invoke` receives a pointer to the promise's `Result<Value, any Error>`:
/// handlers are only ever registered by `Promise<Value>` on itself, so the
/// pointee always has the type the handler was made for.
@usableFromInline
struct _Callback: Sendable {
    @usableFromInline
    typealias Invoke = @Sendable (
        _ callback: borrowing _Callback, _ result: UnsafeRawPointer, _ cancelled: Bool, _ work: inout _Worklist
    ) -> Void

    @usableFromInline
    typealias Run = @Sendable (_ result: UnsafeRawPointer, _ cancelled: Bool, _ work: inout _Worklist) -> Void

    @usableFromInline
    let invoke: Invoke

    /// The child promise this handler settles, if any; also followed for
    /// progress. Kept as one word rather than `any _PromiseNode` (object
    /// and witness table): the witness table is needed only for progress,
    /// where `followingNode` looks it up. An observer that may give up
    /// (`wait`, `await`) keeps here the object it is withdrawn by instead.
    @usableFromInline
    let follower: _FollowerReference

    /// The user's closure, in one of the `_…Body` wrappers.
    @usableFromInline
    let body: _ErasedBody

    /// A handler whose `invoke` finds its child in `follower` and its
    /// closure in `body` (read back with `body(as:)`).
    @inlinable
    init<Body>(follower: (any AnyObject & Sendable)?, body: Body, invoke: @escaping Invoke) {
        self.follower = _FollowerReference(object: follower)
        self.body = _ErasedBody(body)
        self.invoke = invoke
    }

    /// A handler that is one closure, capturing what it needs. Costs an
    /// allocation for the captures; for the handlers not on a chain.
    @inlinable
    init(follower: (any AnyObject & Sendable)?, _ run: @escaping Run) {
        self.init(follower: follower, body: _RunBody(call: run)) { callback, result, cancelled, work in
            callback.body(as: _RunBody.self).call(result, cancelled, &work)
        }
    }

    @inlinable
    func run(_ result: UnsafeRawPointer, _ cancelled: Bool, _ work: inout _Worklist) {
        invoke(self, result, cancelled, &work)
    }

    /// The stored body; `Body` must be the wrapper it was stored as.
    @inlinable
    func body<Body>(as _: Body.Type) -> Body {
        body.restore(as: Body.self)
    }

    /// The follower, which must be a `Node`.
    @inlinable
    func follower<Node: AnyObject>(as _: Node.Type) -> Node {
        unsafeDowncast(follower.object.unsafelyUnwrapped, to: Node.self)
    }

    /// The follower as a promise of unknown type, for progress; nil for an
    /// observer's withdrawal key.
    @inlinable
    var followingNode: (any _PromiseNode)? {
        follower.object.flatMap { $0 as? any _PromiseNode }
    }
}

/// A handler's follower, in a struct rather than a bare optional so that
/// it is destroyed directly (see `_NodeReference`).
@usableFromInline
struct _FollowerReference: Sendable {
    @usableFromInline let object: (any AnyObject & Sendable)?

    @inlinable
    init(object: (any AnyObject & Sendable)?) {
        self.object = object
    }
}

/// One closure in a wrapper struct, with the wrapper's type erased: two
/// words, a closure's code and its retained context.
///
/// The closure is wrapped in a struct whose field spells its exact type
/// (`_MapBody`, …) before its bits are kept. Bit-casting a function value
/// itself is wrong in generic code: passing it as `unsafeBitCast`'s
/// generic argument re-abstracts it through a thunk, and the bits read
/// back are that thunk, called with the wrong conventions. Structs are
/// never re-abstracted.
@usableFromInline
struct _ErasedBody: Sendable {
    /// Held for its context's reference count; never called as this type.
    @usableFromInline
    let bits: @Sendable () -> Void

    @inlinable
    init<Body>(_ body: Body) {
        self = unsafeBitCast(body, to: _ErasedBody.self)
    }

    @inlinable
    func restore<Body>(as _: Body.Type) -> Body {
        unsafeBitCast(self, to: Body.self)
    }
}

/// `then`'s closure.
@usableFromInline
struct _MapBody<Input, Output>: Sendable {
    @usableFromInline let call: @Sendable (Input) throws -> Output
    @inlinable init(call: @escaping @Sendable (Input) throws -> Output) { self.call = call }
}

/// The closure of a `then` that continues with another promise.
@usableFromInline
struct _FlatMapBody<Input, Output: Sendable>: Sendable {
    @usableFromInline let call: @Sendable (Input) throws -> Promise<Output>
    @inlinable init(call: @escaping @Sendable (Input) throws -> Promise<Output>) { self.call = call }
}

/// `recover`'s closure.
@usableFromInline
struct _RecoverBody<Output>: Sendable {
    @usableFromInline let call: @Sendable (any Error) throws -> Output
    @inlinable init(call: @escaping @Sendable (any Error) throws -> Output) { self.call = call }
}

/// The closure of a `recover` that continues with another promise.
@usableFromInline
struct _FlatRecoverBody<Output: Sendable>: Sendable {
    @usableFromInline let call: @Sendable (any Error) throws -> Promise<Output>
    @inlinable init(call: @escaping @Sendable (any Error) throws -> Promise<Output>) { self.call = call }
}

/// `always`'s closure.
@usableFromInline
struct _ResultBody<Value: Sendable>: Sendable {
    @usableFromInline let call: @Sendable (Result<Value, any Error>) -> Void
    @inlinable init(call: @escaping @Sendable (Result<Value, any Error>) -> Void) { self.call = call }
}

/// A handler made as one capturing closure.
@usableFromInline
struct _RunBody: Sendable {
    @usableFromInline let call: _Callback.Run
    @inlinable init(call: @escaping _Callback.Run) { self.call = call }
}

/// No closure (an adoption).
@usableFromInline
struct _NoBody: Sendable {
    @usableFromInline let bits: @Sendable () -> Void = {}
    @inlinable init() {}
}

extension UnsafeRawPointer {
    /// The result a `_Callback` is called with.
    @inlinable
    func _result<Value: Sendable>(_: Value.Type) -> Result<Value, any Error> {
        assumingMemoryBound(to: Result<Value, any Error>.self).pointee
    }
}

/// Promises settled but whose handlers have not run yet, and other work
/// that would otherwise nest one call deeper per link of a chain (a
/// combinator's inputs to tell that it was cancelled).
///
/// An `.inline` child's handlers run nested inside its parent's, which is
/// fastest (the typed result is at hand), but would recurse once per link
/// and overflow the stack on long chains. So nesting stops at
/// `maximumDepth`: deeper children are queued here and the outermost settle
/// runs the queue in a loop. The first entry is inline, so a straight chain
/// allocates nothing.
///
/// Under a ``DrainBudget`` the loops that go through many handlers or
/// queued entries ask `yields()` before each one; once the budget is spent,
/// each of them stops, queues what it has not done, and the outermost drain
/// hands the queue to the budget's executor (see `DrainBudget.swift`).
@usableFromInline
struct _Worklist {
    /// Nested settles allowed before queueing: a few kilobytes of stack.
    @usableFromInline static var maximumDepth: Int { 32 }

    @usableFromInline var depth: Int
    /// Steps taken by loops that may yield; every 64th reads the budget.
    @usableFromInline var steps: UInt
    /// When this drain's budget runs out, on the monotonic clock in
    /// nanoseconds: 0 until the first check under a budget,
    /// `_Worklist.spent` once it has run out.
    @usableFromInline var deadline: UInt64
    @usableFromInline var next: (any _PendingWork)?
    @usableFromInline var more: [any _PendingWork]

    /// Assigns in the body rather than with default values: those are
    /// compiled as functions that cannot be inlined into another module,
    /// and every settle made a call to get an empty array.
    @inlinable
    init() {
        depth = 0
        steps = 0
        deadline = 0
        more = []
    }

    @inlinable
    mutating func push(_ node: any _PendingWork) {
        if next == nil {
            next = node
        } else {
            more.append(node)
        }
    }

    /// Whether the loop asking should stop here and queue the rest: true
    /// once a ``DrainBudget`` on this thread is spent. Counts a step, and
    /// reads the budget only every 64th, so that settling without a budget
    /// stays as cheap as it is without this check (docs/PERFORMANCE.md).
    @inlinable
    mutating func yields() -> Bool {
        steps &+= 1
        guard steps & 63 == 0 else { return false }
        return _budgetSpent()
    }

    /// Runs queued promises' handlers until none are left, or, once the
    /// budget is spent, hands the rest to the budget's executor.
    @inlinable
    mutating func drain() {
        while true {
            if let node = next {
                if yields() { return _handOff() }
                next = nil
                node._runPendingCallbacks(&self)
            } else if !more.isEmpty {
                if yields() { return _handOff() }
                more.removeLast()._runPendingCallbacks(&self)
            } else {
                return
            }
        }
    }
}

/// The inputs of a combinator, for the cycle check.
@usableFromInline
protocol _CombinedInputs: AnyObject, Sendable {
    /// The inputs, as promises of any value type.
    var _cycleInputs: [any _PromiseNode] { get }
}

extension _CombinedInputs {
    /// Makes `output`'s cycle check walk up through these inputs, until
    /// `output` settles (`takeSettlement` forgets them).
    @inlinable
    func watchedBy<Output>(_ output: Promise<Output>) {
        output._withState { $0.writableExtras.combinedInputs = self }
    }
}

/// Work queued on a `_Worklist`, run by its outermost drain, or by a later
/// one on a ``DrainBudget``'s executor.
@usableFromInline
protocol _PendingWork: AnyObject, Sendable {
    /// Whether this runs before a spent budget hands the rest of its drain
    /// on (see `_Worklist._handOff()`).
    var _endsInThisTurn: Bool { get }

    /// Runs the work: for a promise, the handlers of a promise settled
    /// through `_Worklist`.
    func _runPendingCallbacks(_ work: inout _Worklist)
}

extension _PendingWork {
    /// Most work may wait for a later drain.
    @inlinable
    var _endsInThisTurn: Bool { false }
}

/// A promise of any value type, as its relatives see it.
@usableFromInline
protocol _PromiseNode: _PendingWork, Sendable {
    /// Cancels this promise because an ancestor was cancelled.
    func _cancelFromAncestor(_ work: inout _Worklist)
    /// One child was cancelled: its handler (found by `child`, if given) is
    /// withdrawn. When that was the last uncancelled child, cancels this
    /// promise too and returns its parent, to go on upwards.
    func _childCancelled(_ child: AnyObject?, _ work: inout _Worklist) -> _UpwardStep?
    /// The promise this one waits on, while pending.
    var _upstream: (any _PromiseNode)? { get }
    /// The next promise for the cycle check (`_upstream`, or further up
    /// through `cycleHint`), whether this one is locked in, and, for a
    /// pending combinator output, its inputs.
    var _cycleStep: (next: (any _PromiseNode)?, lockedIn: Bool, inputs: (any _CombinedInputs)?) { get }
    /// Cancels this promise as ``Promise/cancel()`` does, or, if it has
    /// already settled, returns its children in flight to forward to.
    func _cancelOrForward() -> [any _PromiseNode]
    /// Records `child` among this settled promise's children in flight.
    func _addChildInFlight(_ child: any _PromiseNode)
    /// Records a far ancestor for the cycle check (see `cycleHint`).
    func _setCycleHint(_ ancestor: any _PromiseNode)
    /// Follows an ancestor's progress; returns the promises to pass it on to.
    func _followProgress(_ fraction: Double) -> [any _PromiseNode]
    /// One line for `debugDescription`.
    var _summary: String { get }
    /// Queues the handlers from `callbacks[start...]` on `work` for a later
    /// drain (the budget is spent); until they have run, handlers
    /// registered meanwhile wait behind them.
    func _deferHandOut(_ callbacks: [_Callback], from start: Int, _ cancelled: Bool, _ work: inout _Worklist)
}
