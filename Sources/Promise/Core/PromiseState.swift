/// Everything about a promise that changes, guarded by the promise's lock.
///
/// Deliberately not generic over the value type. A generic class's `deinit`
/// is compiled once, unspecialised, in this module: destroying a generic
/// state struct there looks up its type metadata at run time, for every
/// promise (docs/PERFORMANCE.md). Kept non-generic, the state is
/// destroyed by plain code; the value lives in an existential (no
/// allocation for values of up to three words) and is cast back on reads.
@usableFromInline
struct _PromiseState: Sendable {
    /// Read only once settled. `isPending` is kept apart so that the hot
    /// paths test a byte instead of inspecting the existential-carrying enum.
    @usableFromInline var outcome: _Outcome
    @usableFromInline var isPending: Bool
    @usableFromInline var isFulfilled = false
    /// Resolved with another promise (A+ 2.3.2): only that promise (or a
    /// cancellation) settles it now; `fulfill`, `reject` and `resolve` refuse.
    @usableFromInline var isLockedIn = false
    /// Handlers waiting for the result. Taken (emptied) when they run.
    @usableFromInline var callbacks = _CallbackList()
    /// True from settling until every handler has been handed out: queued
    /// (a promise settled inside another promise's handler run, see
    /// `_Worklist`) or being run by the settling thread. A handler registered
    /// meanwhile is appended behind them and run by that thread
    /// (`_runLateCallbacks`), keeping registration order.
    @usableFromInline var callbacksPending = false
    /// `settledByCancel` and `keepsHandlerWhenCancelled`, in one byte: as a
    /// Bool of its own the second flag costs a store in every promise's
    /// initialiser.
    @usableFromInline var flags: UInt8 = 0
    /// The promise this one waits on (then-parent or adopted promise) while
    /// pending: for upward cancellation, cycle detection and the debug chain.
    /// Released on settling, which breaks the parent↔child reference cycle.
    @usableFromInline var parent: _NodeReference
    /// Children (then/recover/always children, adopters, combinators) not
    /// cancelled yet; cancelling the last of them cancels this promise.
    /// Counted only while pending, the only time the rule applies: a settled
    /// promise that gets a `then` per request for months counts nothing (two
    /// `UInt32`s counting every registration trapped after 2^32 of them).
    /// One `Int` in the same 8 bytes, raised once per registration at most,
    /// cannot overflow in practice.
    @usableFromInline var uncancelledChildren = 0
    /// What few promises use, allocated on first use (see `_StateExtras`).
    @usableFromInline var extras: _StateExtras?

    /// A pending state, following `parent` if given.
    @inlinable
    init(parent: (any _PromiseNode)? = nil) {
        outcome = .pending
        isPending = true
        self.parent = _NodeReference(parent)
    }

    /// A settled state.
    @inlinable
    init(settled outcome: consuming _Outcome, fulfilled: Bool) {
        self.outcome = outcome
        isPending = false
        isFulfilled = fulfilled
        parent = _NodeReference(nil)
    }

    /// Bit `bit` of `flags`, which packs the Booleans below into one byte.
    @inlinable
    func flag(_ bit: UInt8) -> Bool {
        flags & bit != 0
    }

    @inlinable
    mutating func setFlag(_ bit: UInt8, _ isSet: Bool) {
        flags = isSet ? flags | bit : flags & ~bit
    }

    /// Whether the pending callbacks are to see a cancellation from above.
    @inlinable
    var settledByCancel: Bool {
        get { flag(1) }
        set { setFlag(1, newValue) }
    }

    /// An `always` child: cancelling it leaves its handler on the parent,
    /// which still runs once the parent settles. Other children withdraw
    /// theirs.
    @inlinable
    var keepsHandlerWhenCancelled: Bool {
        get { flag(2) }
        set { setFlag(2, newValue) }
    }

    /// Recorded among its parent's children in flight (see `_StateExtras`).
    @inlinable
    var isInFlight: Bool {
        get { flag(4) }
        set { setFlag(4, newValue) }
    }

    /// Watched by the leak report: made pending while it was on.
    @inlinable
    var isLeakChecked: Bool {
        get { flag(8) }
        set { setFlag(8, newValue) }
    }

    /// A handler that may hand work to an executor other than `.inline`
    /// (or whose kind is not known) was registered while pending: settling
    /// then hands the handlers out under `callbacksPending`, keeping
    /// registration order for handlers registered meanwhile on other
    /// threads. Without one, the settling thread hands out `.inline`
    /// handlers only, which have no order to keep with other threads'
    /// registrations (see `Promise._handOutThread`).
    @inlinable
    var hasOrderedHandlers: Bool {
        get { flag(16) }
        set { setFlag(16, newValue) }
    }

    /// A drain under a ``DrainBudget`` stopped handing out the handlers and
    /// queued the rest (`_DeferredHandOut`): `callbacksPending` stays set,
    /// and handlers registered meanwhile wait in `callbacks` until the rest
    /// has run.
    @inlinable
    var isHandOutDeferred: Bool {
        get { flag(32) }
        set { setFlag(32, newValue) }
    }

    @inlinable
    var writableExtras: _StateExtras {
        mutating get {
            if let extras { return extras }
            let created = _StateExtras()
            extras = created
            return created
        }
    }

    /// 0…1; always 1 once fulfilled.
    @inlinable
    var progress: Double {
        get { isFulfilled ? 1 : extras?.progress ?? 0 }
        set { writableExtras.progress = newValue }
    }

    /// Read-only: observers are added with ``addProgressObserver(_:)``.
    @inlinable
    var progressObservers: [_ProgressObserver] {
        extras?.progressObservers ?? []
    }

    /// Appends in place. Through a get/set pair the array would be read out
    /// (one more reference to its buffer), appended to, so copied whole, and
    /// written back: every observer would copy all before it, quadratic in
    /// the observers of one promise (an `all` over one pending input
    /// repeated 40,000 times has 40,000).
    @inlinable
    mutating func addProgressObserver(_ observer: _ProgressObserver) {
        writableExtras.progressObservers.append(observer)
    }

    @inlinable
    var cycleHint: (any _PromiseNode)? {
        get { extras?.cycleHint }
        set { if newValue != nil || extras != nil { writableExtras.cycleHint = newValue } }
    }

    @inlinable
    var name: String? {
        get { extras?.name }
        set { if newValue != nil || extras != nil { writableExtras.name = newValue } }
    }

    /// Records `result` as the outcome of this pending state.
    ///
    /// Builds the outcome in place instead of assigning it: assigning an
    /// `_Outcome` (an existential inside, so handled through its value
    /// witness) builds it in a temporary first and copies it with 16-byte
    /// loads that stall on the stores still building it
    /// (docs/PERFORMANCE.md). Initialising over `.pending`, which holds
    /// nothing, leaks nothing.
    @inlinable
    mutating func record<Value: Sendable>(_ result: Result<Value, any Error>) {
        withUnsafeMutablePointer(to: &outcome) { $0.initialize(to: _Outcome(result)) }
        isPending = false
        isFulfilled = result.isSuccess
    }

    /// Records `result`. Returns what must be run outside the lock, or nil
    /// when the promise was already settled.
    @inlinable
    mutating func settle<Value: Sendable>(_ result: Result<Value, any Error>) -> _Settlement? {
        guard isPending else { return nil }
        record(result)
        return takeSettlement()
    }

    /// Takes the only handler, when settling may hand it straight out
    /// (`Promise._handOutSingleLocked`): it is `.inline` (no
    /// `hasOrderedHandlers`), and there is nothing in `extras` to hand over.
    /// Otherwise nil, and nothing changes.
    @inlinable
    mutating func takeOnlyInlineHandler() -> _Callback? {
        guard extras == nil, callbacks.rest.array == nil, !hasOrderedHandlers else { return nil }
        return callbacks.first.take()
    }

    /// Empties what settling hands over: handlers, parent, progress observers.
    /// When there are handlers, the caller must run them and then
    /// `_runLateCallbacks`, which clears `callbacksPending`.
    @inlinable
    mutating func takeSettlement() -> _Settlement {
        let discarded = extras.map { $0.withdrawnCount > 0 } == true ? removeWithdrawn() : nil
        callbacksPending = !callbacks.isEmpty
        var settlement = _Settlement(callbacks: callbacks.take(), parent: parent.take())
        guard let extras else { return settlement }
        settlement.discarded = discarded
        extras.cycleHint = nil
        extras.combinedInputs = nil
        let observers = extras.progressObservers
        extras.progressObservers = []
        if isFulfilled, extras.progress < 1 {
            extras.progress = 1
            if !observers.isEmpty { settlement.observersOfCompletion = observers }
        }
        return settlement
    }
}

/// The parts of a promise's state that most promises never use: progress,
/// its observers, a name, the cycle check's shortcut. Kept out of
/// `_PromiseState` so that creating and destroying a promise, which every
/// `then` does, initialises and releases none of them.
@usableFromInline
final class _StateExtras: @unchecked Sendable {  // Read and written only under the owning promise's lock.
    @usableFromInline var progress: Double = 0
    @usableFromInline var progressObservers: [_ProgressObserver] = []
    @usableFromInline var name: String?
    /// For a locked-in promise: an ancestor the cycle check may jump to,
    /// past ancestors that are all locked in too (so none of them can be
    /// the promise being resolved). Keeps long adoption chains linear.
    @usableFromInline var cycleHint: (any _PromiseNode)?
    /// For a combinator's output while pending: its inputs, which the
    /// cycle check walks up through too (a promise resolved with
    /// `Promise.all([itself])` would otherwise wait on itself for ever).
    @usableFromInline var combinedInputs: (any _CombinedInputs)?
    /// Children still pending after this promise settled — a handler queued
    /// on its executor, or a child adopting the promise its handler returned
    /// — for ``Promise/cancel()`` of this settled promise to forward to
    /// (RXPromise's rule). Weak: a child that is gone costs nothing more, and
    /// gone ones are dropped as the list doubles (`pruneInFlightAt`).
    @usableFromInline var childrenInFlight: [_WeakNode] = []
    @usableFromInline var pruneInFlightAt = 16
    @usableFromInline var pruningInFlight = false
    /// Handlers withdrawn but still in the list, by their follower (see
    /// `withdraw(following:)`), and how many there are in all.
    @usableFromInline var withdrawn: [ObjectIdentifier: _WithdrawnHandlers] = [:]
    @usableFromInline var withdrawnCount = 0

    @inlinable
    init() {}
}

/// A weak reference to a promise of any value type.
@usableFromInline
struct _WeakNode: Sendable {
    @usableFromInline weak var node: (any _PromiseNode)?

    @inlinable
    init(_ node: any _PromiseNode) {
        self.node = node
    }
}

/// A settled or pending outcome, with the value type erased (see `_PromiseState`).
@usableFromInline
enum _Outcome: Sendable {
    case pending
    case fulfilled(any Sendable)
    case rejected(any Error)

    @inlinable
    init<Value: Sendable>(_ result: Result<Value, any Error>) {
        switch result {
        case .success(let value): self = .fulfilled(value)
        case .failure(let error): self = .rejected(error)
        }
    }

    /// The typed result; `Value` is always the promise's own value type.
    @inlinable
    func result<Value: Sendable>(as _: Value.Type) -> Result<Value, any Error>? {
        switch self {
        case .pending: return nil
        case .fulfilled(let value): return .success(value as! Value)
        case .rejected(let error): return .failure(error)
        }
    }
}

/// What settling hands back to run outside the lock.
///
/// Not copyable on purpose: it is moved from the lock to the handler run,
/// and a copy of it (the handlers, the parent, the observers) would retain
/// and release each of them on every settle (docs/PERFORMANCE.md).
@usableFromInline
struct _Settlement: ~Copyable, Sendable {
    @usableFromInline var callbacks: _CallbackList
    @usableFromInline var parent: _NodeReference
    /// Progress observers to tell about the final 1.0, if settling brought it.
    @usableFromInline var observersOfCompletion: [_ProgressObserver]?
    /// Withdrawn handlers taken out of the list as it was handed out,
    /// released with the settlement, after unlocking: they may hold the
    /// last reference to user captures.
    @usableFromInline var discarded: _CallbackList?

    @inlinable
    init(callbacks: _CallbackList, parent: _NodeReference) {
        self.callbacks = callbacks
        self.parent = parent
    }

    /// Runs the handlers of `owner`, the promise settled (deferring inline
    /// children to `work`), and tells progress observers about the final 1.0.
    @inlinable
    consuming func run<Value: Sendable>(
        _ result: Result<Value, any Error>, cancelled: Bool, of owner: Promise<Value>, _ work: inout _Worklist
    ) {
        // Moved into an optional because a closure may not consume `self`.
        var settlement = Optional(self)
        withUnsafePointer(to: result) { settlement.take()!._run(UnsafeRawPointer($0), cancelled, owner, &work) }
    }

    /// The untyped part of `run`, kept out of line: it needs no
    /// specialisation, so one copy serves every value type.
    @usableFromInline
    consuming func _run(
        _ result: UnsafeRawPointer, _ cancelled: Bool, _ owner: AnyObject, _ work: inout _Worklist
    ) {
        if let observersOfCompletion {
            for observer in observersOfCompletion { observer.notify(1) }
        }
        callbacks.take().run(result, cancelled, owner, &work)
    }
}

/// A strong reference to a promise of any value type, or none.
///
/// A bare `(any _PromiseNode)?` held in memory (a field of a struct too
/// large for registers, such as `_Settlement`) is destroyed by Swift 6.3's
/// type-layout lowering through `Optional`'s generic value witness: the
/// type metadata is looked up and the payload's witness called, where a
/// release would do (the same code built with `-disable-type-layout`
/// releases directly). Wrapped in this non-generic struct it is destroyed
/// by the struct's own witness, which releases directly.
/// `_FollowerReference` and `_LaterCallbacks` exist for the same reason
/// (docs/PERFORMANCE.md).
@usableFromInline
struct _NodeReference: Sendable {
    @usableFromInline var node: (any _PromiseNode)?

    @inlinable
    init(_ node: (any _PromiseNode)?) {
        self.node = node
    }

    /// Empties the reference, returning what it held.
    @inlinable
    mutating func take() -> _NodeReference {
        _NodeReference(node.take())
    }
}

extension Result {
    @inlinable
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
