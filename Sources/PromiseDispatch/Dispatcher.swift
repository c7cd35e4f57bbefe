import Logging
import Promise
import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry
import PromiseStore

/// The JSON-RPC 2.0 side of the daemon: reads each line a connection sends,
/// checks the envelope, runs the method on the ``Registry`` and writes the
/// answer. Loop thread only, as the server and the registry are.
///
/// - One line is one message: a request, a notification (no "id": run, never
///   answered) or a batch (an array: answered by one array holding the
///   answers to its requests). Blank lines are ignored.
/// - A bad message gets an error answer (-32700 not JSON, -32600 not a
///   request, -32601 unknown method, -32602 bad params, -32004 batch too
///   large) and the connection stays usable.
/// - `wait` may answer later; answers on one connection can come out of order.
/// - A batch runs in slices of about ``TurnBudget/standard`` each, one a loop
///   turn, so that the other clients are served between them; its
///   connection handles no further line until the last slice has run
///   (`RPCPeer.lineContinues()`). Its one answer goes out once every
///   member has run and what they changed is stored.
///
/// ```swift
/// let dispatcher = Dispatcher(registry: registry, limits: limits, logger: logger)
/// dispatcher.connectionOpened(peer)
/// dispatcher.handle(line: Array(#"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"a"}}"#.utf8), from: peer)
/// // peer receives {"id":1,"jsonrpc":"2.0","result":{"id":"a","state":"pending",…}}
/// ```
public final class Dispatcher: RPCHandler {
    public let registry: Registry
    public let limits: DaemonLimits
    private let logger: Logger
    /// Open connections, for `info`.
    private var peers: [UInt64: any RPCPeer] = [:]
    /// The storage of the last request's params, emptied, for the next
    /// request's to be read into (see ``RequestLine/init(parsing:reusing:)``).
    /// `@exclusivity(unchecked)`: loop thread only, and no access to it
    /// spans a call that could reach it again.
    @exclusivity(unchecked) private var spareParams: [RPCParams.Pair]?
    /// How long one slice of a batch runs before the loop serves others.
    var turnBudget = TurnBudget.standard
    /// Set by ``stop(_:)``: batches still running stop.
    private var isStopping = false

    public init(registry: Registry, limits: DaemonLimits, logger: Logger) {
        self.registry = registry
        self.limits = limits
        self.logger = logger
        registry.events = NotificationWriter(registry: registry)
    }

    /// Number of open connections.
    public var connectionCount: Int { peers.count }

    public func connectionOpened(_ peer: any RPCPeer) {
        peers[peer.connectionID] = peer
        registry.connect(RegistryPeerLink(peer))
    }

    public func connectionClosed(_ peer: any RPCPeer) {
        guard peers.removeValue(forKey: peer.connectionID) != nil else { return }
        registry.disconnect(peer.connectionID)
    }

    public func handle(line: [UInt8], from peer: any RPCPeer) {
        line.withUnsafeBytes { handle(line: $0, from: peer) }
    }

    /// Reads the line where it lies: the server lends most lines from the
    /// bytes it read, which spares copying each into an array of its own.
    public func handle(line: UnsafeRawBufferPointer, from peer: any RPCPeer) {
        if line.allSatisfy(Self.isJSONWhitespace) { return }
        let message: RequestLine
        do {
            // Ids lent: the line is read before this returns (a batch that
            // goes on in later turns takes its members' ids first).
            message = try RequestLine(parsing: line, reusing: &spareParams, lendingIDs: true)
        } catch {
            send(.json(JSONRPCResponse.error(.null, RPCError(.parseError, "parse error: the line is not valid JSON"))), to: peer)
            return
        }
        registry.beginAnswer()
        // Consumed: the envelope moves out instead of being copied, each of
        // its members retained, then released with `message`.
        switch consume message {
        case .batch(let members):
            handleBatch(members, from: peer)
        case .single(let envelope):
            _ = process(envelope, from: peer, answers: ConnectionAnswers(peer: peer, journal: registry.journal))
        }
        registry.endAnswer()
    }

    private func handleBatch(_ members: consuming [JSONRPCEnvelope?], from peer: any RPCPeer) {
        if members.isEmpty {
            send(.json(JSONRPCResponse.error(.null, RPCError(.invalidRequest, "an empty batch is not a request"))), to: peer)
            return
        }
        guard members.count <= limits.maxBatchSize else {
            let error = RPCError(
                .limitExceeded, "a batch holds at most \(limits.maxBatchSize) requests",
                data: ["limit": "maxBatchSize", "value": .int(limits.maxBatchSize)])
            send(.json(JSONRPCResponse.error(.null, error)), to: peer)
            return
        }
        let answer = BatchAnswer(count: members.count, maxBytes: limits.maxBatchAnswerBytes) { [weak self] answers in
            self?.send(.batch(answers), to: peer)
        }
        let run = BatchRun(members: members, peer: peer, answer: answer)
        guard !runSlice(of: run) else { return }
        // The rest runs in later turns: the line is read no longer.
        run.ownLentIDs()
        peer.lineContinues()
        continueLater(run)
    }

    /// Runs members of `run` until all have run or the turn's budget is
    /// spent (a member at least). Returns whether all have run.
    private func runSlice(of run: BatchRun) -> Bool {
        let budget = startedTurnBudget()
        while let (index, member) = run.next() {
            let answered = process(
                member, from: run.peer, answers: BatchMemberAnswers(batch: run.answer, index: index), slice: budget)
            if answered { run.answer.expect(index) }
            if run.isFinished { break }
            if budget.isSpent { return false }
        }
        run.answer.close()
        return true
    }

    /// Runs the next slice of `run` in a later loop turn (through the
    /// registry's executor, which runs what the loop thread gives it after
    /// the loop has looked for I/O).
    private func continueLater(_ run: BatchRun) {
        let boxed = LoopBound((dispatcher: WeakLoopBound(self), run: run))
        registry.executor.execute {
            boxed.value.dispatcher.value?.resume(boxed.value.run)
        }
    }

    /// Runs slices of `run` until it is done or must wait for a later turn.
    /// A batch whose connection closed, or that the daemon's stop overtook,
    /// stops where it is: the rest is dropped, as the lines that connection
    /// had not handled yet are.
    private func resume(_ run: BatchRun) {
        if run.isRunning {
            run.runsAgain = true
            return
        }
        run.isRunning = true
        defer { run.isRunning = false }
        repeat {
            run.runsAgain = false
            guard run.peer.isOpen, !isStopping else {
                run.abandon()
                run.peer.lineFinished()
                return
            }
            registry.beginAnswer()
            let finished = runSlice(of: run)
            registry.endAnswer()
            if finished {
                run.peer.lineFinished()
                return
            }
            continueLater(run)
        } while run.runsAgain
    }

    /// Runs one message. `answers` is sent the answer message once, now or
    /// later, unless it is a notification. Returns whether it will be.
    /// `slice`: the budget of the batch slice it runs in, which a `list`
    /// page ends at.
    private func process(
        _ message: consuming JSONRPCEnvelope?, from peer: any RPCPeer, answers: some AnswerChannel,
        slice: TurnBudget? = nil
    ) -> Bool {
        let id: JSONValue?
        let method: RequestedMethod
        // A constant, its storage taken at the end by consuming it: as a
        // variable, it is retained and released around each call it is
        // lent to.
        let params: RPCParams
        let lentID: LentPromiseID?
        do {
            (id, method, params, lentID) = try JSONRPCRequest.check(message)
        } catch {
            if error.notification { return false }
            answers.send(.json(JSONRPCResponse.error(error.id, error.error)))
            return true
        }
        do {
            try checkDepth(of: params)
            // The call is made only for the methods that keep it, not made
            // and destroyed (its answer channel's references) for every
            // create and resolve (docs/PERFORMANCE.md).
            let reply = try route(
                method, params, lentID: lentID, connectionID: peer.connectionID, room: answers.remainingBytes,
                slice: slice
            ) {
                RegistryCall(connectionID: peer.connectionID, later: id.map { RequestAnswers(id: $0, answers: answers) })
            }
            // Consumed, not copied into a tuple with the id: that retained
            // and released every part of the reply.
            if let id {
                switch consume reply {
                case .value(let result)?: answers.send(.json(JSONRPCResponse.result(id, result)))
                case .record(let entry)? where registry.valueByteCount(of: entry, upTo: answers.remainingBytes) >= answers.remainingBytes ?? .max:
                    // A batch whose answer is full: the record is not written only to be
                    // dropped (1,000 `get`s of a 16 MiB value wrote 16 GB before being
                    // refused), nor its value counted again when its text is kept (the
                    // same `get`s counted up to the room left, 2.3 GB: 3 s).
                    answers.send(.json(JSONRPCResponse.error(id, BatchAnswer.tooLarge(limits.maxBatchAnswerBytes))))
                case .record(let entry)?:
                    // Read here, so that the writer captures no object but
                    // the entry: the registry and this dispatcher are weakly
                    // referenced, which makes every retain of them slow.
                    let now = registry.now()
                    let maxChildren = limits.maxRecordChildren
                    let valueText = registry.valueText(of: entry)
                    // Captured unretained, `entry` holding it until the
                    // answer is written: captured as a reference, it was
                    // retained and released three times per answer.
                    let record = Unmanaged.passUnretained(entry)
                    withExtendedLifetime(entry) {
                        answers.sendRecordResult(id: id) { text in
                            record._withUnsafeGuaranteedRef {
                                $0.writeRecord(now: now, maxChildren: maxChildren, valueText: valueText, to: &text)
                            }
                        }
                    }
                case .page(let page)?:
                    let now = registry.now()
                    let maxChildren = limits.maxRecordChildren
                    let registry = self.registry
                    answers.sendRecordResult(id: id) { text in
                        text.append(#"{"cursor":"#)
                        if let cursor = page.cursor { JSONValue.writeString(String(cursor), to: &text) } else { text.append("null") }
                        text.append(#","promises":["#)
                        for (index, entry) in page.promises.enumerated() {
                            if index > 0 { text.append(UInt8(ascii: ",")) }
                            entry.writeRecord(now: now, maxChildren: maxChildren, valueText: registry.valueText(of: entry), to: &text)
                        }
                        text.append("]}")
                    }
                case nil: break
                }
            }
        } catch let error as RegistryError {
            if let id { answers.send(.json(JSONRPCResponse.error(id, RPCError(error)))) }
        } catch let error as RPCError {
            if let id { answers.send(.json(JSONRPCResponse.error(id, error))) }
        } catch {
            logger.info("Method failed unexpectedly", metadata: ["rpc.method": "\(method.name)", "error": "\(error)"])
            if let id { answers.send(.json(JSONRPCResponse.error(id, RPCError(.internalError, "internal error: \(error)")))) }
        }
        spareParams = params.takeStorage()
        return id != nil
    }

    /// Refuses params nested deeper than `maxValueDepth`. Values are stored
    /// and sent back inside records, envelopes and combinator results, each
    /// adding levels; capping them well below the parser's 512 keeps every
    /// answer readable by a strict client.
    private func checkDepth(of params: RPCParams) throws(RPCError) {
        guard params.depth > limits.maxValueDepth else { return }
        throw RPCError(
            .limitExceeded, "params are nested deeper than \(limits.maxValueDepth) levels",
            data: ["limit": "maxValueDepth", "value": .int(limits.maxValueDepth)])
    }

    /// What a method answers at once.
    private enum Reply {
        case value(JSONValue)
        /// The record of this promise, taken when the answer is made.
        case record(RemotePromise)
        /// `{"cursor","promises"}`: the page's cursor and its promises' records, taken when the answer is made.
        case page(ListPage)
    }

    /// ``turnBudget``, started now: the slice of a request sent on its own.
    private func startedTurnBudget() -> TurnBudget {
        var budget = turnBudget
        budget.start()
        return budget
    }

    /// Runs `method`; nil when the answer comes later (or never, for a
    /// notification).
    ///
    /// Picked by the ``RPCMethod`` the parser told from the bytes: comparing
    /// the method's string with each name in turn would cost a comparison
    /// per method listed before it.
    private func route(
        _ method: RequestedMethod, _ params: RPCParams, lentID: LentPromiseID?, connectionID: UInt64, room: Int?,
        slice: TurnBudget?,
        call: () -> RegistryCall
    ) throws -> Reply? {
        guard case .known(let known) = method else {
            throw RPCError(.methodNotFound, "method \"\(method.name)\" not found", data: ["method": .string(method.name)])
        }
        if let journal = registry.journal, let failure = journal.failure, known.changesStoredState {
            throw Self.storeError(failure, journal.store)
        }
        return switch known {
        case .create: .record(try registry.create(CreateCommand(decoding: params), connectionID: connectionID))
        case .resolve: .record(try registry.resolve(ResolveCommand(decoding: params, lentID: lentID)))
        case .reject: .record(try registry.reject(RejectCommand(decoding: params, lentID: lentID)))
        case .cancel: .record(try registry.cancel(id: params.promiseID("id")))
        case .cancelPrefix: .value(try registry.cancelPrefix(CancelPrefixCommand(decoding: params), slice: turnBudget).json)
        case .get: .record(try registry.get(id: params.promiseID("id")))
        case .list: .page(try registry.list(ListQuery(decoding: params), maxBytes: room, slice: slice))
        case .wait:
            try registry.wait(id: params.promiseID("id"), timeout: params.milliseconds("timeoutMs"), call())
                .map(Reply.record)
        case .subscribe: .value(["subscribed": .int(try registry.subscribe(ids: params.promiseIDs("ids"), call()))])
        case .unsubscribe:
            .value(["unsubscribed": .int(try registry.unsubscribe(ids: params.promiseIDs("ids"), call()))])
        case .then: .record(try registry.then(ThenCommand(decoding: params)))
        case .progress: .record(try registry.progress(ProgressCommand(decoding: params)))
        case .all: .record(try registry.combine(CombineCommand(decoding: params, kind: .all)))
        case .any: .record(try registry.combine(CombineCommand(decoding: params, kind: .any)))
        case .race: .record(try registry.combine(CombineCommand(decoding: params, kind: .race)))
        case .allSettled: .record(try registry.combine(CombineCommand(decoding: params, kind: .allSettled)))
        case .info: .value(registry.info(connections: peers.count).json)
        case .forget: .value(try forget(ForgetCommand(decoding: params)))
        case .logs: .value(try registry.logs(LogsQuery(decoding: params), call()).json)
        case .log: .value(try registry.log(LogCommand(decoding: params)).json)
        case .lease: .record(try registry.lease(id: params.promiseID("id"), call()))
        case .poolSet: .value(try registry.poolSet(PoolSetCommand(decoding: params)).json)
        case .poolAcquire: try registry.poolAcquire(PoolAcquireCommand(decoding: params), call()).map { .value($0.json) }
        case .poolRelease: .value(try registry.poolRelease(PoolReleaseCommand(decoding: params), call()).json)
        }
    }

    /// `forget` by ids or by prefix, as its answer.
    private func forget(_ command: ForgetCommand) -> JSONValue {
        switch command {
        case .ids(let ids): registry.forget(ids: ids).json
        case .prefix(let prefix, let cursor): registry.forgetPrefix(prefix, after: cursor).json
        }
    }

    /// Sends `message` once every change made so far is stored (see
    /// ``ConnectionAnswers``).
    private func send(_ message: OutgoingMessage, to peer: any RPCPeer) {
        ConnectionAnswers(peer: peer, journal: registry.journal).send(message)
    }

    /// Answers to a message sent on its own: to its connection, once every
    /// change made so far is stored, so that no answer reveals what a crash
    /// could undo. When that change could not be stored, the answers that
    /// acknowledged it become -32603 errors.
    ///
    /// It holds the journal rather than this dispatcher, so that it can be
    /// kept (by an unanswered `wait`) in the registry this dispatcher owns
    /// without a weak reference, which would not fit in an
    /// `any AnswerChannel` without an allocation.
    private struct ConnectionAnswers: AnswerChannel {
        let peer: any RPCPeer
        let journal: GroupCommit?

        func send(_ message: OutgoingMessage) {
            guard let journal else { return Self.transmit(message, to: peer) }
            if case .batch = message { return sendBatch(message, journal: journal) }
            // Serialized now, so that what the journal holds counts towards the
            // peer's output limit (`RPCPeer.hold(bytes:)`), in bytes it will send.
            let line = message.serializedLine()
            peer.hold(bytes: line.count)
            journal.deliver { [peer] failure in
                peer.release(bytes: line.count)
                guard peer.isOpen else { return }
                guard let failure else { return _ = peer.send(line) }
                Self.transmit(message.refusingResults(Dispatcher.storeError(failure, journal.store)), to: peer)
            }
        }

        /// A batch's answer, in the parts its members were written as, so
        /// that an answer of tens of MiB is copied once, into the connection.
        private func sendBatch(_ message: OutgoingMessage, journal: GroupCommit) {
            let parts = message.serializedParts()
            let byteCount = parts.reduce(0) { $0 + $1.count }
            peer.hold(bytes: byteCount)
            journal.deliver { [peer] failure in
                peer.release(bytes: byteCount)
                guard peer.isOpen else { return }
                guard let failure else { return _ = peer.send(parts: parts) }
                Self.transmit(message.refusingResults(Dispatcher.storeError(failure, journal.store)), to: peer)
            }
        }

        /// Without a journal, the answer goes to the socket from where it is
        /// written: no array is made of it (a record answer is the commonest message).
        func sendRecordResult(id: JSONValue, _ writeResult: (inout JSONTextBuffer) -> Void) {
            guard journal == nil else { return send(.recordResult(id: id, writeResult)) }
            guard peer.isOpen else { return }
            JSONTextBuffer.withLine({ OutgoingMessage.writeRecordResult(id: id, writeResult, to: &$0) }) { line in
                _ = peer.send(line: line)
            }
        }

        private static func transmit(_ message: OutgoingMessage, to peer: any RPCPeer) {
            guard peer.isOpen else { return }
            if case .batch = message { return _ = peer.send(parts: message.serializedParts()) }
            peer.send(message.serializedLine())
        }
    }

    /// Answers to a member of a batch: into the batch's one answer.
    private struct BatchMemberAnswers: AnswerChannel {
        let batch: BatchAnswer
        let index: Int

        func send(_ message: OutgoingMessage) {
            batch.fill(index, message)
        }

        var remainingBytes: Int? { batch.remainingBytes }
    }

    /// -32603 for a store that cannot write.
    static func storeError(_ failure: PromiseStoreError, _ store: any PromiseStore) -> RPCError {
        RPCError(
            .internalError, "the store cannot write: \(failure.message)",
            data: ["reason": .string(failure.message), "store": .string(store.location)])
    }

    /// Stops: rejects what cannot go on without the daemon (running
    /// commands), then calls `done` once every change is stored.
    public func stop(_ done: @escaping () -> Void) {
        isStopping = true
        registry.prepareToStop()
        guard let journal = registry.journal else { return done() }
        journal.flush(done)
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

@available(*, unavailable)
extension Dispatcher: Sendable {}
