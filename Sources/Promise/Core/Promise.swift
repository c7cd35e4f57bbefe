#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// This thread's identity (`pthread_self()`): even, since it is an aligned
/// address, and never 0.
@inlinable
func _currentThread() -> UInt {
    #if canImport(Darwin)
    UInt(bitPattern: pthread_self())
    #else
    UInt(pthread_self())
    #endif
}

/// The eventual result of a task: pending, then fulfilled with a `Value` or
/// rejected with an error, once.
///
/// A promise is created pending and settled by whoever does the work;
/// everyone else chains handlers onto it. Every handler runs exactly once,
/// whether it was registered before or after the promise settled, on the
/// ``Executor`` it names (``DefaultExecutor`` unless told otherwise) —
/// *regardless* of which thread settles the promise. Handlers registered on
/// one serial executor run in registration order, also when one is
/// registered while another thread's `fulfill` is still handing out the
/// earlier ones (that thread then hands out the late one after them).
///
/// ```swift
/// let download = Promise<Data>()
/// URLSession.shared.dataTask(with: url) { data, _, error in
///     if let data { download.fulfill(data) } else { download.reject(error!) }
/// }.resume()
///
/// download
///     .then { data in try JSONDecoder().decode(Item.self, from: data) }
///     .then(on: .main) { item in show(item) }
///     .recover { error in showError(error) }
/// ```
///
/// Cancellation is a rejection with `CancellationError` that also reaches
/// every pending descendant; a parent is cancelled once every child of it
/// has been cancelled, so the underlying task stops when no consumer is left
/// (see ``cancel()`` and ``onCancel(on:_:)``).
///
/// Promises are thread-safe: settle, chain, cancel and read them from any
/// thread. Each promise is one allocation holding its state behind a lock
/// that is held for a few loads and stores and never while user code runs.
public final class Promise<Value: Sendable>: @unchecked Sendable {  // `_lock` guards `_unsafeState`.
    @usableFromInline
    let _lock = _FutexLock()

    /// While a settling thread hands out handlers that are all `.inline`
    /// (no `hasOrderedHandlers`): that thread's `pthread_self()`, plus 1 once
    /// a handler registered by that same thread from inside one of them (a
    /// re-entrant registration) was put behind the rest; else 0.
    ///
    /// Such a hand-out keeps no order with other threads' registrations:
    /// they run at once, as once it is over, since no earlier handler waits
    /// on an executor. Only the settling thread's own registrations must
    /// wait, and only it writes here, so it needs no lock round when it is
    /// done, where a flag under the lock would take one on every settle
    /// (docs/PERFORMANCE.md).
    @usableFromInline
    let _handOutThread = Atomic<UInt>(0)

    /// Read and written only inside `_withState`. Exclusivity is unchecked
    /// because the lock already makes access exclusive, and a dynamic check
    /// on every access would cost more than the lock.
    @usableFromInline @exclusivity(unchecked)
    var _unsafeState: _PromiseState

    /// Unique within the process, for logs and debugging; increasing in
    /// creation order among the promises made on one thread (each thread
    /// numbers from blocks of its own, so numbers do not order promises
    /// made on different threads).
    public let serialNumber: UInt64

    /// How deep in its chain this promise is: 0 for a promise created
    /// directly, its parent's generation + 1 for a `then`, `recover` or
    /// `always` child.
    public let generation: Int

    /// The serial number of the promise this one was chained from, 0 if none;
    /// kept for ``debugDescription`` after the parent itself is released.
    @usableFromInline
    let _parentSerial: UInt64

    /// Creates a pending promise.
    ///
    /// ```swift
    /// let answer = Promise<Int>()
    /// answer.fulfill(42)
    /// ```
    @inlinable
    public init() {
        _unsafeState = _PromiseState()
        let counter = _SerialNumbers.next()
        serialNumber = counter & ~_SerialNumbers.flagBits
        generation = 0
        _parentSerial = 0
        if counter & _SerialNumbers.flagBits != 0, _SerialNumbers.leakCheckApplies(counter) { _startLeakCheck() }
    }

    /// Creates a promise already fulfilled with `value`.
    @inlinable
    public init(value: Value) {
        _unsafeState = _PromiseState(settled: .fulfilled(value), fulfilled: true)
        serialNumber = _SerialNumbers.next() & ~_SerialNumbers.flagBits
        generation = 0
        _parentSerial = 0
    }

    /// Creates a promise already rejected with `error`.
    @inlinable
    public init(error: any Error) {
        _unsafeState = _PromiseState(settled: .rejected(error), fulfilled: false)
        serialNumber = _SerialNumbers.next() & ~_SerialNumbers.flagBits
        generation = 0
        _parentSerial = 0
    }

    /// Creates a pending child of `parent`.
    ///
    /// Numbered before it stores `parent`: numbered after, with `then`
    /// inlined around it, the optimiser keeps the parent alive across the
    /// call by a second reference, taken and dropped again, a retain and a
    /// release on every `then` (docs/PERFORMANCE.md).
    @inlinable
    init<Parent>(following parent: Promise<Parent>) {
        let counter = _SerialNumbers.next()
        _unsafeState = _PromiseState(parent: parent)
        serialNumber = counter & ~_SerialNumbers.flagBits
        generation = parent.generation + 1
        _parentSerial = parent.serialNumber
        if counter & _SerialNumbers.flagBits != 0, _SerialNumbers.leakCheckApplies(counter) { _startLeakCheck() }
    }

    /// Tells the leak report when a watched promise is freed (see
    /// ``PromiseLeakReport``). Unwatched promises, all of them while the
    /// report is off, pay a test of a flag already in the cache.
    deinit {
        if _unsafeState.isLeakChecked { _endLeakCheck() }
    }
}

// MARK: - Settling

extension Promise {
    /// Runs `body` with the state, under the lock. Keep `body` to a few
    /// loads and stores: never user code, never another promise's lock.
    @inlinable
    func _withState<R: ~Copyable>(_ body: (inout _PromiseState) -> R) -> R {
        _lock.lock()
        defer { _lock.unlock() }
        return body(&_unsafeState)
    }

    /// Fulfils the promise with `value`.
    ///
    /// Only the first settle counts: once fulfilled, rejected or cancelled, a
    /// promise never changes, and later calls return `false`.
    ///
    /// - Returns: `true` if this call settled the promise.
    @inlinable
    @discardableResult
    public func fulfill(_ value: Value) -> Bool {
        _settle(.success(value))
    }

    /// Rejects the promise with `error`.
    ///
    /// Rejecting with `CancellationError` makes ``isCancelled`` true but,
    /// unlike ``cancel()``, does not cancel descendants or run handlers as
    /// cancelled: it is a plain rejection.
    ///
    /// - Returns: `true` if this call settled the promise.
    @inlinable
    @discardableResult
    public func reject(_ error: any Error) -> Bool {
        _settle(.failure(error))
    }

    /// Settles and runs every handler that was waiting, unless the promise
    /// is locked in to another one it was resolved with.
    @inlinable
    @discardableResult
    func _settle(_ result: Result<Value, any Error>, cancelled: Bool = false) -> Bool {
        _lock.lock()
        guard !_unsafeState.isLockedIn, _unsafeState.isPending else {
            _lock.unlock()
            return false
        }
        _unsafeState.record(result)
        if _settleLeafLocked() { return true }
        var work = _Worklist()
        if let single = _unsafeState.takeOnlyInlineHandler() {
            _handOutSingleLocked(single, result, cancelled, &work)
            work.drain()
            return true
        }
        let settlement = _unsafeState.takeSettlement()
        let handsOut = _unsafeState.callbacksPending
        let inlineOnly = handsOut && !_unsafeState.hasOrderedHandlers
        if inlineOnly { _unsafeState.callbacksPending = false }
        _lock.unlock()
        if inlineOnly {
            _runInlineHandout(settlement, result, cancelled, &work)
        } else {
            settlement.run(result, cancelled: cancelled, of: self, &work)
            if handsOut { _runLateCallbacks(result, &work) }
        }
        work.drain()
        return true
    }

    /// Settles from inside another promise's handler run. The handlers of
    /// this promise run here, nested, up to `_Worklist.maximumDepth` levels;
    /// deeper, they are queued on `work` and run by the outermost settle, so
    /// chains of any length never exhaust the stack.
    ///
    /// Both settles lock by hand: handing the settlement out of a
    /// `_withState` closure (as an optional, or a step enum here) adds work
    /// to every `then` + `fulfill` (docs/PERFORMANCE.md).
    @inlinable
    @discardableResult
    func _settle(_ result: Result<Value, any Error>, cancelled: Bool = false, _ work: inout _Worklist) -> Bool {
        let nested = work.depth < _Worklist.maximumDepth
        _lock.lock()
        guard _unsafeState.isPending else {
            _lock.unlock()
            return false
        }
        _unsafeState.record(result)
        if _settleLeafLocked() { return true }
        if nested, let single = _unsafeState.takeOnlyInlineHandler() {
            work.depth += 1
            _handOutSingleLocked(single, result, cancelled, &work)
            work.depth -= 1
            return true
        }
        let runHere = nested || (_unsafeState.callbacks.isEmpty && _unsafeState.progressObservers.isEmpty)
        guard runHere else {
            _unsafeState.callbacksPending = true
            _unsafeState.settledByCancel = cancelled
            _lock.unlock()
            work.push(self)
            return true
        }
        let settlement = _unsafeState.takeSettlement()
        let handsOut = _unsafeState.callbacksPending
        let inlineOnly = handsOut && !_unsafeState.hasOrderedHandlers
        if inlineOnly { _unsafeState.callbacksPending = false }
        _lock.unlock()
        work.depth += 1
        if inlineOnly {
            _runInlineHandout(settlement, result, cancelled, &work)
        } else {
            settlement.run(result, cancelled: cancelled, of: self, &work)
            if handsOut { _runLateCallbacks(result, &work) }
        }
        work.depth -= 1
        return true
    }

    /// Under the lock, just after recording the outcome: if there is
    /// nothing to hand out — no handlers, nothing in `extras` (progress
    /// observers, the cycle check's links) — unlocks and lets go of the
    /// parent, after unlocking (it may hold the last reference to user
    /// captures), and returns true. Otherwise returns false, still locked.
    ///
    /// The leaf of every chain settles this way, without building, running
    /// and destroying an empty `_Settlement`. Always inlined, as the call
    /// itself would be a sizeable part of a settle (docs/PERFORMANCE.md).
    @inlinable @inline(__always)
    func _settleLeafLocked() -> Bool {
        guard _unsafeState.callbacks.isEmpty, _unsafeState.extras == nil else { return false }
        let parent = _unsafeState.parent.take()
        _lock.unlock()
        withExtendedLifetime(parent) {}
        return true
    }

    /// Runs handlers that are all `.inline`, marked as handed out by this
    /// thread (`_handOutThread`); then runs those this thread registered
    /// from inside them, which `_register` put behind the rest.
    @inlinable
    func _runInlineHandout(
        _ settlement: consuming _Settlement, _ result: Result<Value, any Error>, _ cancelled: Bool,
        _ work: inout _Worklist
    ) {
        let thread = _currentThread()
        _handOutThread.store(thread, ordering: .relaxed)
        settlement.run(result, cancelled: cancelled, of: self, &work)
        _endInlineHandout(thread, result, &work)
    }

    /// `_runInlineHandout` for the commonest settle: one `.inline` handler
    /// (a link of a chain), no progress observers or other extras, taken by
    /// `takeOnlyInlineHandler` under the lock, which this releases; the
    /// parent is let go after the handler has run, as with a `_Settlement`.
    /// Handing it straight out skips building, running and destroying one
    /// on every link of a chain (docs/PERFORMANCE.md).
    ///
    /// Borrowed, not consumed: moving the handler out of the caller's
    /// binding copies it (three retains, three releases).
    @inlinable
    func _handOutSingleLocked(
        _ callback: borrowing _Callback, _ result: Result<Value, any Error>, _ cancelled: Bool,
        _ work: inout _Worklist
    ) {
        let parent = _unsafeState.parent.take()
        _lock.unlock()
        let thread = _currentThread()
        _handOutThread.store(thread, ordering: .relaxed)
        withUnsafePointer(to: result) { callback.run(UnsafeRawPointer($0), cancelled, &work) }
        _endInlineHandout(thread, result, &work)
        withExtendedLifetime(parent) {}
    }

    /// Ends an inline hand-out by `thread`, running the handlers it
    /// registered from inside it, which `_register` put behind the rest.
    @inlinable
    func _endInlineHandout(_ thread: UInt, _ result: Result<Value, any Error>, _ work: inout _Worklist) {
        let reentered = _handOutThread.load(ordering: .relaxed) != thread
        _handOutThread.store(0, ordering: .relaxed)
        // `_register` set `callbacksPending` when it put a handler behind:
        // from then on every registration queues until the loop is done.
        if reentered { _runLateCallbacksInLoop(result, &work) }
    }

    @inlinable
    func _runPendingCallbacks(_ work: inout _Worklist) {
        var outcome = _Outcome.pending
        var cancelled = false
        var handsOut = false
        let settlement = _withState { state -> _Settlement? in
            guard state.callbacksPending else { return nil }
            outcome = state.outcome
            cancelled = state.settledByCancel
            let settlement = state.takeSettlement()
            handsOut = state.callbacksPending
            return settlement
        }
        guard let settlement, let result = outcome.result(as: Value.self) else { return }
        settlement.run(result, cancelled: cancelled, of: self, &work)
        if handsOut { _runLateCallbacks(result, &work) }
    }

    /// Runs the handlers registered while this promise's handlers were being
    /// handed out (`callbacksPending`), in registration order, until none is
    /// left; then lets later registrations run at once.
    ///
    /// Without this, a handler registered on another thread between the
    /// settle's unlock and the end of its run would find the promise settled
    /// and go to its executor at once, ahead of earlier handlers still being
    /// handed out: on a serial executor the later one would run first. Costs
    /// one uncontended lock per settle that had handlers.
    ///
    /// Does nothing while the hand-out is deferred (`isHandOutDeferred`):
    /// the late handlers then run after the deferred ones, which call this
    /// again.
    @inlinable
    func _runLateCallbacks(_ result: Result<Value, any Error>, _ work: inout _Worklist) {
        _lock.lock()
        guard !_unsafeState.callbacks.isEmpty || _unsafeState.isHandOutDeferred else {
            _unsafeState.callbacksPending = false
            _lock.unlock()
            return
        }
        _lock.unlock()
        _runLateCallbacksInLoop(result, &work)
    }

    /// The rare part of `_runLateCallbacks`, out of line.
    @usableFromInline
    func _runLateCallbacksInLoop(_ result: Result<Value, any Error>, _ work: inout _Worklist) {
        while true {
            _lock.lock()
            if _unsafeState.isHandOutDeferred {
                _lock.unlock()
                return
            }
            guard !_unsafeState.callbacks.isEmpty else {
                _unsafeState.callbacksPending = false
                _lock.unlock()
                return
            }
            let late = _unsafeState.callbacks.take()
            _lock.unlock()
            // Registered after settling: they see the result, never a
            // cancellation from above (as when registered later still).
            withUnsafePointer(to: result) { late.run(UnsafeRawPointer($0), false, self, &work) }
        }
    }

    /// Registers `callback`, or runs it at once when the promise has settled.
    /// `callback` must have been made for this promise's `Value`.
    /// A pending child starts from this promise's progress (it follows it).
    /// `inline`: `callback` runs only `.inline` work (see `hasOrderedHandlers`);
    /// false when it may hand work to an executor, or is not known to.
    ///
    /// A worklist is made only when the handler runs here: a registration on
    /// a pending promise, the common case, has nothing to drain, so it makes
    /// and drains no empty worklist (docs/PERFORMANCE.md).
    @inlinable
    func _register(_ callback: consuming _Callback, isChild: Bool, inline: Bool = false) {
        guard let callback = _append(callback, isChild: isChild, inline: inline) else { return }
        var work = _Worklist()
        _runSettled(callback, &work)
        work.drain()
    }

    @inlinable
    func _register(_ callback: consuming _Callback, isChild: Bool, inline: Bool = false, _ work: inout _Worklist) {
        guard let callback = _append(callback, isChild: isChild, inline: inline) else { return }
        _runSettled(callback, &work)
    }

    /// Appends `callback` to the handlers while they are still to be handed
    /// out; otherwise returns it, to be run with the result.
    ///
    /// Locks by hand rather than through `_withState`: a closure could only
    /// copy `callback` into the list: three retains and, later, three
    /// releases that moving it avoids.
    @inlinable
    func _append(_ callback: consuming _Callback, isChild: Bool, inline: Bool) -> _Callback? {
        _lock.lock()
        guard _unsafeState.isPending || _unsafeState.callbacksPending || _queuesBehindOwnHandout() else {
            _lock.unlock()
            return callback
        }
        if !inline { _unsafeState.hasOrderedHandlers = true }
        if isChild { _unsafeState.uncancelledChildren += 1 }
        let progress = _unsafeState.progress
        let follower = progress > 0 ? callback.followingNode : nil
        _unsafeState.callbacks.append(callback)
        _lock.unlock()
        if let follower { _ = follower._followProgress(progress) }
        return nil
    }

    /// Runs a handler registered after this promise settled (and after its
    /// handlers were handed out): it sees the result, never a cancellation
    /// from above.
    @inlinable
    func _runSettled(_ callback: consuming _Callback, _ work: inout _Worklist) {
        guard let result else { return }
        withUnsafePointer(to: result) { callback.run(UnsafeRawPointer($0), false, &work) }
    }

    /// Under the lock, for a registration on a settled promise: whether this
    /// thread is handing out its `.inline` handlers and registers from inside
    /// one of them. Then the new handler goes behind the rest, as with
    /// `callbacksPending` (which this sets, so that other threads' later
    /// registrations queue behind it too), and the hand-out is told
    /// (`_handOutThread`) to run what was queued.
    @inlinable
    func _queuesBehindOwnHandout() -> Bool {
        let marker = _handOutThread.load(ordering: .relaxed)
        guard marker != 0, marker == _currentThread() else { return false }
        _unsafeState.callbacksPending = true
        _handOutThread.store(marker | 1, ordering: .relaxed)
        return true
    }

    /// Calls `body` inline with the result once settled. Not a child: it
    /// neither keeps the promise from being cancelled nor is cancelled by it.
    @inlinable
    func _observe(_ body: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        _register(_Callback(follower: nil) { result, _, _ in body(result._result(Value.self)) }, isChild: false)
    }

    /// Removes the handler registered with `follower` (a child, or an
    /// observer's key) while this promise is pending, so that a consumer that
    /// gave up leaves nothing behind: polling a promise that stays pending for
    /// days with timed-out waits kept each handler until it settled (400,000
    /// waits, 106 MiB). Nothing happens if the handler has already run.
    @usableFromInline
    func _withdraw(_ follower: AnyObject) {
        let removed = _withState { $0.withdraw(following: follower) }
        // Released here, after unlocking: it may hold the last reference to
        // user captures, whose deinit may touch this promise.
        withExtendedLifetime(removed) {}
    }
}

// MARK: - State

extension Promise {
    /// True until the promise is fulfilled, rejected or cancelled.
    @inlinable
    public var isPending: Bool {
        _withState { $0.isPending }
    }

    /// True once the promise is fulfilled.
    @inlinable
    public var isFulfilled: Bool {
        _withState { $0.isFulfilled }
    }

    /// True once the promise is rejected, cancelled included.
    @inlinable
    public var isRejected: Bool {
        _withState { !$0.isPending && !$0.isFulfilled }
    }

    /// True once the promise is rejected with Swift's `CancellationError`,
    /// by ``cancel()`` or otherwise.
    @inlinable
    public var isCancelled: Bool {
        guard case .failure(let error)? = result else { return false }
        return error is CancellationError
    }

    /// The outcome, or nil while pending.
    @inlinable
    public var result: Result<Value, any Error>? {
        _withState { $0.isPending ? nil : $0.outcome }?.result(as: Value.self)
    }

    /// An optional name for logs and ``debugDescription``.
    ///
    /// ```swift
    /// let config = loadConfig().named("config")
    /// ```
    public var name: String? {
        get { _withState { $0.name } }
        set { _withState { $0.name = newValue } }
    }

    /// Sets ``name`` and returns the promise, for use in a chain.
    @discardableResult
    public func named(_ name: String) -> Promise<Value> {
        self.name = name
        return self
    }
}
