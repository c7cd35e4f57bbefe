import Foundation
import Logging
import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// The daemon's promises, by id: what the protocol's methods act on.
///
/// A remote promise *is* a core `Promise<JSONValue>` (one made by `create`
/// gets its core promise when something first needs it, see
/// ``promise(of:)``; until then resolving or rejecting it is a field set, and
/// the registry told as the core promise's observer would tell it): `then` children are
/// core `then` children, `all`/`any`/`race`/`allSettled` are the core's
/// combinators, cancellation is the core's `cancel()` with its propagation
/// rules, and subscriptions, `wait` answers, timeouts and leases hang off core
/// handlers. The registry adds ids, records, per-connection state and the
/// loop-side resources (timers and processes from ``LoopServices``).
///
/// ## Threading
///
/// The registry lives on the daemon's loop thread and is not `Sendable`: call
/// it only there. Core handlers it installs run on `executor`, which must run
/// work on that same thread — the loop's executor in the daemon; `.inline` in
/// unit tests, where the test's thread plays the loop.
///
/// ```swift
/// let registry = Registry(limits: DaemonLimits(), services: loop, executor: loopExecutor, logger: logger)
/// registry.connect(peer)                                 // a connection, as a RegistryPeer
/// let job = try registry.create(CreateCommand(id: "build"), connectionID: peer.connectionID)
/// _ = try registry.resolve(ResolveCommand(promise: .id("build"), value: 42))
/// ```
public final class Registry {
    /// The bounds it enforces (maxPromises, subscriptions and waiters per
    /// connection, running processes, process output).
    public let limits: DaemonLimits
    let services: any LoopServices
    package let executor: any Executor
    /// `@exclusivity(unchecked)` as the maps below.
    @exclusivity(unchecked) var logger: Logger {
        didSet { logsDebug = logger.logLevel <= .debug }
    }
    /// Whether ``logger`` writes debug messages, asked by every creation
    /// and settlement before making one: asking the logger itself (a
    /// runtime-checked read of its storage, a copy of its handler) costs
    /// far more than reading a flag (docs/PERFORMANCE.md).
    @exclusivity(unchecked) private(set) var logsDebug: Bool

    // The maps and counters every request touches are `@exclusivity(unchecked)`:
    // they are used on the loop thread only, and no access to one of them
    // spans a call that could reach it again, so the runtime's check of each
    // access would only cost time (docs/PERFORMANCE.md). Ids are keys by
    // their bytes (`PromiseKey`): two spellings of one text are two ids.
    @exclusivity(unchecked) var entries = PromiseIndex<RemotePromise>()
    /// Every promise in creation order, for `list`; forgotten ones linger
    /// until `forget` compacts it.
    @exclusivity(unchecked) var order: [RemotePromise] = []
    @exclusivity(unchecked) var nextSequence = 0
    @exclusivity(unchecked) var sessions: [UInt64: RegistrySession] = [:]
    /// The sessions subscribed to each id (by connection id), including ids
    /// not created yet. They are held here, not looked up in `sessions`, so
    /// that telling thousands of subscribers costs no hashing per subscriber.
    @exclusivity(unchecked) var subscribers = PromiseMap<[UInt64: RegistrySession]>()
    /// `wait` requests per id, including ids not created yet.
    @exclusivity(unchecked) var waiters = PromiseMap<[Waiter]>()
    /// How many of those and of `subscribers` are for ids not created yet (Registry+Subscriptions).
    @exclusivity(unchecked) var uncreatedWatches = UncreatedWatches()
    var runningProcesses = 0
    /// The pools whose slots exec steps and `pool.acquire` callers take (Registry+Pools.swift).
    lazy var pools = ExecPools(limits: limits)
    /// Set by ``prepareToStop()``: no command starts any more.
    var isStopping = false
    var nextGeneratedID = 1
    /// Pushes to send once the current answer is out (see ``endAnswer()``).
    @exclusivity(unchecked) package var deferred: [() -> Void] = []
    /// Where settled, progress and log events go; nil drops them.
    package var events: (any RegistryEventSink)?
    /// Milliseconds since 1970, for `created`, `settled` and deadlines.
    /// Read at every creation and settlement: unchecked, as the maps above.
    @exclusivity(unchecked) package var now: () -> Int64 = Registry.wallClockMilliseconds

    /// The wall clock to the nearest millisecond, read with `clock_gettime`
    /// rather than through `Date`, three times per create+resolve pair
    /// (docs/PERFORMANCE.md).
    static func wallClockMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1000 + (Int64(time.tv_nsec) + 500_000) / 1_000_000
    }

    /// Where changes are made durable; nil keeps everything in memory only.
    public let journal: GroupCommit?
    /// Settled promises in the order they settled, for garbage collection
    /// (``Registry/collectExpired()``); `retentionStart` is the first not yet looked at.
    @exclusivity(unchecked) var retentionQueue: [RemotePromise] = []
    var retentionStart = 0
    /// How long settled promises are kept; nil keeps them until forgotten.
    /// Read at every settlement: unchecked, as the maps above.
    @exclusivity(unchecked) public internal(set) var retainMilliseconds: Int64?
    var retentionTimer: (any ScheduledTimer)?
    /// Settled promises held (the rest are pending).
    @exclusivity(unchecked) var settledCount = 0
    /// Settled promises garbage-collected since start.
    var collectedCount = 0
    /// The steps' output, for `logs` (Registry+Logs.swift).
    let logBook = StepLogBook()
    /// How long a lease restored at start-up waits for a connection to take
    /// it back (the `lease` method) before its promise is rejected; 0 rejects
    /// at once. Set before ``restore(_:)`` (`promised --lease-grace`).
    public var leaseGraceMilliseconds: UInt64 = 0
    /// The folder where the monitors of `then … exec` steps keep their
    /// output and write their outcome (``StepOutputFiles``), so that steps
    /// outlive the daemon: a clean stop leaves them running (unless
    /// ``DaemonLimits/stopStepsAtStop``), and the next start re-attaches to
    /// them or settles them from what they wrote. Nil (no store, or a kernel
    /// without step monitors) rejects running steps at a stop or restart.
    /// Set before ``restore(_:)``.
    public var stepOutputFolder: String?
    var leaseGraceTimer: (any ScheduledTimer)?
    /// Where the process groups of commands left running by a crash are
    /// looked up and stopped (Registry+LeftoverProcesses); tests use a fake.
    var leftoverProcesses = LeftoverProcessGroup.System.system
    /// Large values' JSON text, shared by the answers that carry them.
    @exclusivity(unchecked) var valueTexts: ValueTextCache
    /// What each promise's settlement observer captures (see ``register(_:id:kind:parentID:inputIDs:name:restoring:)``).
    let settlementRelay: SettlementRelay

    /// - Parameters:
    ///   - limits: The bounds to enforce.
    ///   - services: Timers and processes, delivered on the loop thread.
    ///   - executor: Where core handlers run: must be the loop thread.
    ///   - journal: Makes changes durable before they are acknowledged; nil for memory only.
    ///   - logger: For settlements and processes (debug and info levels).
    public init(limits: DaemonLimits, services: any LoopServices, executor: any Executor,
                journal: GroupCommit? = nil, logger: Logger) {
        self.limits = limits
        self.services = services
        self.executor = executor
        self.journal = journal
        self.logger = logger
        logsDebug = logger.logLevel <= .debug
        // Four of the largest values the daemon makes.
        valueTexts = ValueTextCache(budget: 4 * limits.maxValueBytes)
        settlementRelay = SettlementRelay(executor: executor, journal: journal)
        settlementRelay.registry = self
        // Unowned, not weak: a registry gone would read as "every promise deleted". `deinit`
        // takes them back, for a journal that outlives it (below).
        journal?.snapshots = { [unowned self] ids in storedPromises(ids) }
        journal?.logSnapshots = { [unowned self] ids in storedLogs(ids) }
        journal?.counters = { [unowned self] in
            [Self.nextSequenceCounter: nextSequence, Self.nextGeneratedIDCounter: nextGeneratedID]
        }
    }

    /// At shutdown the server lets its handler, and so this registry, go
    /// before the loop runs the work left in its queue, where a cut of the
    /// journal may wait (a change made as connections closed): it then
    /// writes nothing more of this registry's: the journal's closures reach
    /// the registry through an unowned reference, which must not be read
    /// once it is gone. What was acknowledged has been stored by
    /// `Dispatcher.stop`.
    deinit {
        journal?.snapshots = { _ in [] }
        journal?.logSnapshots = { _ in [] }
        journal?.counters = { [:] }
    }

    /// How many promises it holds.
    public var count: Int { entries.count }

    // MARK: Connections

    /// Starts tracking a connection (its subscriptions, waiters and leases).
    package func connect(_ peer: any RegistryPeer) {
        sessions[peer.connectionID] = RegistrySession(peer: peer, journal: journal)
    }

    /// Forgets a connection: its waiters are dropped, its subscriptions
    /// removed, and the pending promises it leased are rejected — unless the
    /// daemon is stopping: then the connection closes because the daemon
    /// does, the store has been flushed for the last time, and the restart
    /// ends those leases ("lease expired: the daemon restarted"). Rejected
    /// here, they were changes made after the last flush, cut after the
    /// registry was gone (the daemon aborted on SIGTERM with a lease open).
    package func disconnect(_ connectionID: UInt64) {
        guard let session = sessions.removeValue(forKey: connectionID) else { return }
        forgetUncreatedWatches(of: session, connectionID)
        if !logBook.follows.isEmpty { stopFollowingLogs(connectionID) }
        for id in session.subscribedIDs {
            removeSubscriber(connectionID, from: id)
        }
        for waiter in session.waiters.values {
            waiter.timer?.cancel()
            removeWaiter(waiter)
        }
        releasePools(of: connectionID)
        for id in session.leases.sorted() {
            guard let entry = entries[id], entry.isPending,
                  entry.leaseState.holderClosed(connectionID, daemonStopping: isStopping) == .reject
            else { continue }
            let rejection = RemoteRejection(
                message: "lease expired: the connection that created it closed",
                data: ["connection": .int(Int(clamping: connectionID))], origin: id)
            if settle(entry, .failure(rejection)) {
                logger.info("Lease expired", metadata: ["promise.id": "\(id)", "connection.id": "\(connectionID)"])
            }
        }
    }

    /// The daemon is stopping: `then … exec` children whose command is
    /// running under a monitor that writes its outcome (``StepOutputFiles``)
    /// are left running for the next daemon, which settles them, unless
    /// ``DaemonLimits/stopStepsAtStop``; the others, and those about to
    /// start, are rejected, saying why, since the server is about to stop
    /// their processes; a restart does not run them again. Output not yet
    /// saved to the store is saved.
    package func prepareToStop() {
        isStopping = true
        for entry in order where entry.isPending && !entry.isRemoved {
            guard let job = entry.job, let outcome = job.outcome ?? job.reattached else { continue }
            if leavesRunning(job) {
                job.process?.leaveRunning()
                job.process = nil
                logger.info("Left a step running for the next daemon", metadata: [
                    "promise.id": "\(entry.id)", "process.pid": "\(job.recordedProcess?.pid ?? 0)",
                ])
                continue
            }
            job.cancelled = true
            // A re-attached monitor is not among the server's processes, which it stops.
            if job.reattached != nil { job.process?.terminate(graceMilliseconds: limits.killGraceMilliseconds) }
            // The child has adopted `outcome`: settling that settles the child.
            outcome.reject(Self.interruptedCommand(job.spec.argv).at(entry.id))
        }
        // A pending step's log is saved once a second; what came since is
        // saved now, so that the restart has it (`promisectl run`, whose
        // command goes on, keeps writing to it there).
        if !logBook.unsaved.isEmpty {
            logBook.saveTimer?.cancel()
            logBook.saveTimer = nil
            saveUnsavedLogs()
        }
    }

    /// A line is being answered: what settles meanwhile is acted on once
    /// its answer is out (``endAnswer()``).
    package func beginAnswer() {
        settlementRelay.beginAnswer()
    }

    /// The answer begun by ``beginAnswer()`` is out: sends the pushes queued
    /// while answering (e.g. `settled` for a subscription to an already
    /// settled promise), then acts on the settlements and progress heard
    /// meanwhile, as the executor would have, in the same order.
    package func endAnswer() {
        while !deferred.isEmpty {
            let work = deferred
            deferred = []
            for item in work { item() }
        }
        settlementRelay.endAnswer(self)
    }

    // MARK: Promises

    /// The promise `id`, or noSuchPromise.
    func entry(_ id: String) throws(RegistryError) -> RemotePromise {
        guard let entry = entries[id] else { throw Self.noSuchPromise(id) }
        return entry
    }

    /// The promise `reference` names.
    func entry(_ reference: PromiseReference) throws(RegistryError) -> RemotePromise {
        switch reference {
        case .id(let id):
            return try entry(id)
        case .lentBytes(let idBytes):
            guard let entry = entries[bytes: idBytes] else {
                throw Self.noSuchPromise(String(decoding: idBytes, as: UTF8.self))
            }
            return entry
        }
    }

    private static func noSuchPromise(_ id: String) -> RegistryError {
        .noSuchPromise(id: id)
    }

    /// Throws limitExceeded when `count` more promises would pass `limits.maxPromises`,
    /// once the oldest settled promises have made what room they can.
    func reserve(_ count: Int = 1) throws(RegistryError) {
        if entries.count + count > limits.maxPromises { makeRoom(for: count) }
        guard entries.count + count <= limits.maxPromises else {
            throw .limitExceeded(.promises(limits.maxPromises))
        }
    }

    /// Picks the id for a new promise: the client's, unless it is taken and
    /// `ifExists` is `.get` (the existing record is returned) or `.error` (alreadyExists).
    /// `existing` is nil when a new promise is to be made under `id`. With
    /// `replace`, a settled promise of that id is forgotten first, as `forget`
    /// would; a pending one, or one a pending promise needs, is not (alreadyExists).
    func claim(
        _ requested: String?, ifExists: IfExists, replace: Bool = false
    ) throws(RegistryError) -> (id: String, existing: RemotePromise?) {
        guard let requested else { return (generateID(), nil) }
        if let existing = entries[requested] {
            if ifExists == .get { return (requested, existing) }
            if replace {
                try forgetToReplace(existing)
                return (requested, nil)
            }
            throw .alreadyExists(id: requested, state: existing.state, conflict: .taken)
        }
        return (requested, nil)
    }

    /// What daemon-made ids start with: "p1", "p2", …
    static let generatedIDPrefix = "p"
    /// The names of the numbers the store keeps from going back (``StoreBatch/counters``).
    static let nextSequenceCounter = "nextSequence"
    static let nextGeneratedIDCounter = "nextGeneratedID"

    /// A fresh daemon-made id ("p1", "p2", …), skipping ids in use or awaited.
    func generateID() -> String {
        while true {
            let id = "\(Self.generatedIDPrefix)\(nextGeneratedID)"
            nextGeneratedID += 1
            if entries[id] == nil && waiters[id] == nil && subscribers[id] == nil { return id }
        }
    }

    /// Adds `promise` under `id` and hangs the registry's observers on it;
    /// with no promise (`create`), the entry has none until it needs one
    /// (``promise(of:)``). `restoring` is the stored promise it is rebuilt from at start-up:
    /// it keeps its sequence, timestamps and settlement, and is not written again.
    /// `inputs`, when the caller has looked them up, are the entries `inputIDs`
    /// name, position by position: a combinator over many inputs then
    /// probes the table once per input, not three times.
    @discardableResult
    func register(
        _ promise: Promise<JSONValue>?, id: String, kind: RemotePromise.Kind, parentID: String? = nil,
        inputIDs: [String]? = nil, inputs: DistinctInputs? = nil, name: String? = nil,
        restoring stored: StoredPromise? = nil
    ) -> RemotePromise {
        // Read once: each `stored?.member`, `if let stored` and `stored == nil`
        // copies the whole optional (some 300 bytes) first, restored or not.
        let (sequence, created, isRestored, settledBefore): (Int, Int64, Bool, Bool)
        if let stored {
            (sequence, created, isRestored, settledBefore) = (stored.sequence, stored.created, true, !stored.isPending)
        } else {
            (sequence, created, isRestored, settledBefore) = (nextSequence, now(), false, false)
        }
        let entry = RemotePromise(
            id: id, promise: promise, kind: kind, sequence: sequence, parentID: parentID,
            inputIDs: inputIDs, name: name, created: created)
        nextSequence = max(nextSequence, sequence + 1)
        if !uncreatedWatches.isEmpty { uncreatedWatchesMet(id) }
        // Ids are claimed before they are registered, so nothing is replaced;
        // should one be all the same, it counts as removed (see `didSettle`).
        if let replaced = entries.updateValue(entry, forKey: id) { replaced.isRemoved = true }
        order.append(entry)
        if let parentID { entries[parentID]?.childIDs.append(id) }
        if let inputs {
            assert(inputs.mentionCount == inputIDs?.count, "one position per input id")
            for input in inputs.entries where input !== entry { input.addConsumer(id) }
        } else if let inputIDs {
            var seen = Set<String>()
            for inputID in inputIDs where seen.insert(inputID).inserted {
                guard let input = entries[inputID], input !== entry else { continue }
                input.addConsumer(id)
            }
        }
        if settledBefore {
            // Settled before the restart: waiters, subscribers and timers cannot exist yet.
            entry.settled = stored?.settled ?? nil
            entry.settlementHandled = true
            entry.compact()
            settledCount += 1
            return entry
        }
        if let inputs {
            for (input, mentions) in zip(inputs.entries, inputs.mentionsPerEntry) { input.addDependents(mentions) }
        }
        countDependencies(of: entry, by: 1, inputsCounted: inputs != nil)
        if let promise { observeSettlement(of: entry, promise) }
        if !subscribers.isEmpty && subscribers[id] != nil { observeProgress(entry) }
        if !isRestored {
            journal?.touch(id)
            if logsDebug { logger.debug("Promise created", metadata: ["promise.id": "\(id)", "promise.kind": "\(kind.name)"]) }
        }
        return entry
    }

    /// Hangs the registry's settlement observer on `promise`, `entry`'s core promise.
    private func observeSettlement(of entry: RemotePromise, _ promise: Promise<JSONValue>) {
        let relay = settlementRelay
        let boxed = LoopBound(entry)
        // An observer, not a child: it leaves the core's cancellation rules as they are.
        // Settlements happen on the loop thread (requests, timers, process exits, and the
        // core's inline propagation from them), so `.inline` runs there — and at once, before
        // the answer that caused the settlement is delivered, as the journal needs to hold
        // that answer back. The registry's own work waits for the relay (given an
        // executor, `onSettled` ran unspecialised, looking up `Result`'s metadata on every settle).
        promise.onSettled(on: .inline) { result in
            relay.settled(boxed.value, result)
        }
    }

    /// `entry`'s core promise, to chain, cancel or observe. A pending
    /// promise made by `create` is given one now, observed as any other;
    /// a settled one without a core promise answers with a settled
    /// promise in its place.
    func promise(of entry: RemotePromise) -> Promise<JSONValue> {
        if let core = entry.corePromise { return core }
        if let settled = entry.settledPromise { return settled }
        let core = Promise<JSONValue>()
        entry.adoptCore(core)
        observeSettlement(of: entry, core)
        return core
    }

    /// Fulfills or rejects `entry` with `result`: through its core promise
    /// when it has one, else at once, telling the registry as the core
    /// promise's observer would have. False when it was settled already.
    ///
    /// A value given here is the promise's own, never one its parent passed
    /// on (``RemotePromise/hasOwnValue``, see ``shareParentValue(_:)``):
    /// marked before it settles, as the settlement's observers may run at
    /// once, and put back if it had settled already.
    @discardableResult
    func settle(_ entry: RemotePromise, _ result: Result<JSONValue, any Error>) -> Bool {
        guard case .success = result else { return deliver(result, to: entry) }
        let hadOwnValue = entry.hasOwnValue
        entry.hasOwnValue = true
        guard deliver(result, to: entry) else {
            entry.hasOwnValue = hadOwnValue
            return false
        }
        return true
    }

    /// ``settle(_:_:)``'s settling.
    private func deliver(_ result: Result<JSONValue, any Error>, to entry: RemotePromise) -> Bool {
        if let core = entry.corePromise {
            switch result {
            case .success(let value): return core.fulfill(value)
            case .failure(let error): return core.reject(error)
            }
        }
        guard entry.settleWithoutCore(result) else { return false }
        settlementRelay.settled(entry, result)
        return true
    }

    /// Adds `change` to the ``RemotePromise/dependents`` of what the
    /// pending `entry` needs: its `then` parent and its combinator inputs.
    /// Once when it is registered pending (+1) and once when it settles (-1);
    /// while it is pending those cannot be removed, so its ids still name them.
    /// `inputsCounted`: the caller counted the inputs already, from their entries.
    private func countDependencies(of entry: RemotePromise, by change: Int, inputsCounted: Bool = false) {
        if let parentID = entry.parentID, let parent = entries[parentID] { parent.addDependents(change) }
        guard !inputsCounted, let inputIDs = entry.inputIDs else { return }
        for inputID in inputIDs { entries[inputID]?.addDependents(change) }
    }

    /// What a store keeps of each of `ids` still held, now: a cut's
    /// snapshots (an id touched, then removed, has nothing to write but its
    /// deletion).
    func storedPromises(_ ids: [String]) -> [StoredPromise] {
        let now = now()
        var promises: [StoredPromise] = []
        promises.reserveCapacity(ids.count)
        // Appended straight from `stored`: `compactMap` would move each promise
        // (291 bytes) once more through an optional and grow its array as it goes.
        for id in ids {
            guard let entry = entries[id] else { continue }
            if entry.parentID != nil { shareParentValue(entry) }
            let references = entry.isCombinator ? shareInputValues(entry) : nil
            promises.append(entry.stored(now: now, references: references))
        }
        return promises
    }

    /// Marks a fulfilled `then` child without a command, whose value came
    /// from its parent (not from a client's `resolve`: ``RemotePromise/hasOwnValue``),
    /// and whose parent is held and fulfilled, as having its parent's value
    /// (``RemotePromise/sharesParentValue``), so that the value is stored
    /// once, and counts it among the parent's dependents while it is held.
    /// Durable registries only: in memory the value is shared anyway.
    /// Called at the child's first snapshot and when it settles, whichever
    /// comes first (a child of a fulfilled parent is often written before
    /// the registry hears that it settled).
    func shareParentValue(_ entry: RemotePromise) {
        guard journal != nil, !entry.sharesParentValue, let parent = parentWithValue(of: entry) else { return }
        entry.sharesParentValue = true
        parent.addDependents(1)
    }

    /// The parent whose value `entry` has, when `entry` is a fulfilled
    /// `then` child without a command and without a value of its own
    /// (``RemotePromise/hasOwnValue``), and its parent is held and fulfilled.
    private func parentWithValue(of entry: RemotePromise) -> RemotePromise? {
        guard entry.isThenWithoutCommand, !entry.hasOwnValue, case .success? = entry.result,
              let parentID = entry.parentID, let parent = entries[parentID], case .success? = parent.result
        else { return nil }
        assert(entry.job == nil, "a then child without a command has no job")
        return parent
    }

    /// The record of `entry`, now.
    func record(_ entry: RemotePromise) -> JSONValue {
        entry.record(now: now(), maxChildren: limits.maxRecordChildren)
    }

    /// The JSON text of `entry`'s value when it is large: written once,
    /// kept and shared by the answers that carry it (``ValueTextCache``).
    /// Nil while it is not fulfilled, or for a value short enough to write
    /// in place.
    package func valueText(of entry: RemotePromise) -> [UInt8]? {
        guard entry.settlementHandled else {
            // Before `didSettle` (the answer to the `resolve` itself) the
            // value is the request's own and the core promise still holds
            // it: written in place, with no lock taken to read it. But a
            // child that settled in the request that made it has its
            // parent's value, whose text may be kept (counted afresh for
            // each of a batch of 1,000 `then`s of a 16 MB value, up to the
            // room left in the batch's answer, it would take seconds). It
            // was pending until this request, and a pending child's parent
            // is kept (retention, `forget`): the promise under its parent's
            // id is the one whose value it took. (`parentWithValue` asks the
            // kind first, so a `create` or `resolve` answer pays one byte's
            // comparison.)
            return parentWithValue(of: entry).flatMap(valueText(of:))
        }
        guard !entry.hasNoValueText else { return nil }
        guard case .success(let value)? = entry.result else {
            entry.hasNoValueText = true
            return nil
        }
        guard let text = valueTexts.text(of: value, ownedBy: valueOwner(of: entry)) else {
            entry.hasNoValueText = true
            return nil
        }
        return text
    }

    /// Bytes of `entry`'s value as JSON text: its kept text's, or counted
    /// up to `limit`; 0 with no limit.
    package func valueByteCount(of entry: RemotePromise, upTo limit: Int?) -> Int {
        guard let limit else { return 0 }
        return valueText(of: entry)?.count ?? entry.valueByteCount(upTo: limit)
    }

    /// The promise whose value `entry`'s is: up the links of children
    /// stored without a value of their own (``RemotePromise/sharesParentValue``),
    /// one text for all of a chain (a batch of 27 `then`s down a chain over
    /// a 0.8 MB value wrote it 27 times). Such a child keeps its parent held
    /// (``RemotePromise/dependents``), so the id leads to the same parent.
    private func valueOwner(of entry: RemotePromise) -> RemotePromise {
        var owner = entry
        while owner.sharesParentValue, let parentID = owner.parentID, let parent = entries[parentID] {
            owner = parent
        }
        return owner
    }

    /// `entry`'s record as JSON text, for answers that several readers share.
    func recordText(_ entry: RemotePromise) -> [UInt8] {
        let now = now()
        let valueText = valueText(of: entry)
        return JSONTextBuffer.bytes { text in
            entry.writeRecord(now: now, maxChildren: limits.maxRecordChildren, valueText: valueText, to: &text)
        }
    }

    // MARK: Settlement and progress

    /// Runs (on the loop) once `entry` has settled: stops its timer, ends its
    /// lease, answers its waiters and tells its subscribers.
    func didSettle(_ entry: RemotePromise) {
        guard !entry.settlementHandled else { return }
        entry.settlementHandled = true
        if entry.settled == nil { entry.settled = now() }
        settledCount += 1
        // Not `entries[entry.id] === entry`: an entry leaves `entries` only
        // through `remove` or by being replaced, and both mark it, so the flag tells the same without
        // hashing the id and probing a table of millions (a cache miss) per settlement.
        if retainMilliseconds != nil && !entry.isRemoved { retentionQueue.append(entry) }
        entry.timeoutTimer?.cancel()
        entry.timeoutTimer = nil
        entry.compact()
        countDependencies(of: entry, by: -1)
        if entry.parentID != nil { shareParentValue(entry) } else if entry.isCombinator { shareInputValues(entry) }
        if let holder = entry.leaseState.settled() { sessions[holder]?.leases.remove(entry.id) }
        if !logBook.isEmpty { logSettled(entry) }
        if logsDebug { logger.debug("Promise settled", metadata: ["promise.id": "\(entry.id)", "promise.state": "\(entry.state)"]) }
        // Most promises have neither waiters nor subscribers: no record to
        // make, and while no promise has any, not even an id to hash.
        if !waiters.isEmpty, let waiting = waiters.removeValue(forKey: entry.id) {
            // Written once for all of them: each answer copies the text.
            let record = recordText(entry)
            for waiter in waiting {
                sessions[waiter.connectionID]?.waiters[ObjectIdentifier(waiter)] = nil
                waiter.timer?.cancel()
                waiter.answer(.success(record))
            }
        }
        if !subscribers.isEmpty, let subscribed = subscribers.removeValue(forKey: entry.id) {
            for (connectionID, session) in subscribed {
                session.endedSubscriptions += 1
                if session.endedSubscriptions > max(64, session.subscriptionCount) {
                    dropEndedSubscriptions(of: session, connectionID)
                }
            }
            events?.send(.settled(entry), to: subscribed.values)
        }
    }

    /// Sends `entry`'s subscribers its progress from now on. Called at the
    /// first subscription (or at creation, for ids subscribed to before):
    /// most promises never have a subscriber, and observing them all would
    /// cost each an allocation and, on fulfilment, a hop through the loop.
    func observeProgress(_ entry: RemotePromise) {
        guard !entry.observesProgress, entry.isPending else { return }
        entry.observesProgress = true
        let relay = settlementRelay
        let boxed = LoopBound(entry)
        // The core tells a new observer the current progress at once; that
        // is no change, and subscribers hear only of changes. Nor is the 1.0
        // it tells at fulfilment, when the promise is no longer pending:
        // subscribers hear `settled`. What was reported while pending is
        // relayed as settlements are, so it is told before `settled`.
        let current = entry.progress
        promise(of: entry).onProgress(on: .inline) { fraction in
            guard fraction > current, boxed.value.isPending else { return }
            relay.relay(.progressed(boxed.value, fraction))
        }
    }

    /// Acts on what an observer heard, passed on by the ``SettlementRelay``.
    func receive(_ news: SettlementRelay.News) {
        switch news {
        case .settled(let entry): didSettle(entry)
        case .progressed(let entry, let fraction): didProgress(entry, fraction)
        }
    }

    /// Runs (on the loop) when `entry`'s progress moved while it was
    /// pending: tells its subscribers, unless they have been told it settled.
    func didProgress(_ entry: RemotePromise, _ fraction: Double) {
        guard !entry.settlementHandled, let subscribed = subscribers[entry.id] else { return }
        events?.send(.progress(id: entry.id, fraction: fraction, message: entry.progressMessage), to: subscribed.values)
    }

    /// Whether connection `connectionID` is subscribed to `id` now.
    func isSubscribed(_ connectionID: UInt64, to id: String) -> Bool {
        subscribers[id]?[connectionID] != nil
    }

    /// Forgets the ended ids of `session` at once: each call keeps at most
    /// as many ids as it drops, so the work per settlement stays constant.
    func dropEndedSubscriptions(of session: RegistrySession, _ connectionID: UInt64) {
        session.subscribedIDs = session.subscribedIDs.filter { isSubscribed(connectionID, to: $0) }
        session.endedSubscriptions = 0
    }

    func removeSubscriber(_ connectionID: UInt64, from id: String) {
        // In place: copying the subscribers out and back would copy all of
        // them for each one that leaves.
        subscribers[id]?[connectionID] = nil
        if subscribers[id]?.isEmpty == true { subscribers[id] = nil }
    }

    func removeWaiter(_ waiter: Waiter) {
        guard var list = waiters[waiter.promiseID] else { return }
        list.removeAll { $0 === waiter }
        waiters[waiter.promiseID] = list.isEmpty ? nil : list
    }
}

@available(*, unavailable)
extension Registry: Sendable {}
