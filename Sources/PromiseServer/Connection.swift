import Logging
import PromiseJSON
import PromiseModel
import PromiseRPC

/// One accepted client of the daemon. Loop-thread only.
///
/// Reading: bytes → ``LineFramer`` → `handler.handle(line:from:)`, one call
/// per line, in order. A line over `DaemonLimits.maxLineBytes` gets one
/// -32004 error line, then the connection closes once that line is written.
/// When a loop turn read more than one connection, each is read once more
/// as the turn ends (``ReadAhead``), unless its reading is paused.
///
/// Writing never blocks the loop. Messages come as lines, newline included
/// (see `RPCPeer.send(_:)`). The first one ``send(_:)`` gets since the
/// ``FlushQueue`` last ran is written at once, from the caller's bytes;
/// later ones are appended to the connection's output buffer, and the queue
/// writes them together before the loop next sleeps.
/// A write is a non-blocking `send` first (`UVPipe.tryWrite`), and what the
/// socket does not take goes in one `uv_write`; whatever is sent while that write is in flight leaves
/// in one write when it completes. When more than
/// `DaemonLimits.maxOutputBufferBytes` are already waiting at the time of a
/// send, the client is not reading: it is cut off (closed, logged). One
/// answer larger than the limit is still accepted for a client that reads,
/// so memory stays bounded by the limit plus one message.
///
/// Back-pressure: once half that limit waits for a client, the connection
/// stops reading its requests until everything is written, and the lines
/// already read but not yet handled wait too (one read can hold hundreds of
/// requests). A client that pipelines requests faster than it reads answers
/// is slowed down, not cut off — as long as it reads: one whose waiting
/// answers make no progress for ``stallCutOffMilliseconds`` is cut off.
/// Answers it did not ask for (notifications) still count towards the
/// cut-off, and so do messages the durable journal holds back until what they
/// tell is stored (``hold(bytes:)``): a client whose held and queued bytes
/// pass the limit is cut off, and reading pauses at half of it, as for
/// queued bytes alone.
///
/// End of stream from the client (it shut down its writing side): the
/// connection stops reading but stays open for writing, because answers to
/// its requests (a `wait`, a subscription) may still come. It closes when the
/// client closes its side too (`POLLHUP`, checked at once and then every
/// ``hangUpPollMilliseconds``), when a write fails, or when the daemon stops.
///
/// Memory: what the connection buffers (an unfinished line, lines held
/// back, answers not yet written) is reported to ``ConnectionMemory``,
/// which cuts off the largest holders when all connections together pass
/// `DaemonLimits.maxBufferedBytes` (``cutOff(_:)``), and closes a
/// connection whose line stays unfinished for `lineTimeoutSeconds`
/// (``lineTimedOut(afterSeconds:)``).
///
/// The handler's `connectionClosed` is called exactly once per opened
/// connection, from libuv's close callback (never from inside `send` or
/// `handle`).
///
/// The decisions (hold or handle a line, pause or resume, write now or
/// queue, cut off, close) are ``ConnectionState``'s; this class feeds it
/// what libuv and the handler do and performs what it answers.
final class Connection: RPCPeer {
    let connectionID: UInt64
    /// Set once the peer passed the uid check and `connectionOpened` was called.
    private(set) var handler: (any RPCHandler)?
    /// True once `connectionOpened` was called (stays true after closing).
    private(set) var wasOpened = false
    /// Let in past `maxConnections`, to settle promises only (see `RPCPeer.isReserved`).
    var isReserved = false
    private let pipe: UVPipe
    // The state, the framer and the buffers are touched for every request
    // and answer; `@exclusivity(unchecked)` spares the runtime's check of
    // each access (as in `Registry`): loop thread only, and no access
    // overlaps another — the handler that `framer.feed` calls never reaches
    // the framer (only libuv's read callbacks do, and libuv does not nest
    // them), each event of the state returns before its action is
    // performed, and nothing a buffer access calls reaches the buffers.
    @exclusivity(unchecked) private var state: ConnectionState
    @exclusivity(unchecked) private var framer: LineFramer
    private var logger: Logger
    /// Bytes sent and not yet handed to the socket.
    @exclusivity(unchecked) private var queued = OutgoingBytes()
    /// Bytes of the one `uv_write` in flight.
    @exclusivity(unchecked) private var writing = OutgoingBytes()
    private let flushQueue: FlushQueue
    private let memory: ConnectionMemory
    private var timer: UVTimer?

    init(id: UInt64, pipe: UVPipe, limits: DaemonLimits, logger: Logger, flushQueue: FlushQueue,
         memory: ConnectionMemory, onClosed: @escaping (Connection) -> Void) {
        connectionID = id
        self.pipe = pipe
        self.flushQueue = flushQueue
        self.memory = memory
        state = ConnectionState(maxOutputBufferBytes: limits.maxOutputBufferBytes)
        framer = LineFramer(maxLineBytes: limits.maxLineBytes)
        self.logger = logger
        self.logger[metadataKey: "connection.id"] = "\(id)"
        // The closure holds the connection until libuv is done with the
        // pipe; the pipe drops the closure after calling it.
        pipe.onClose = { [self] in
            let handler = self.handler
            self.handler = nil
            onClosed(self)
            handler?.connectionClosed(self)
        }
    }

    var isOpen: Bool { state.isOpen }

    /// The bytes this connection last reported to ``memory`` as buffered.
    var bufferedBytes: Int { state.bufferedBytes }

    /// The uid of the client process, or nil if the socket cannot tell.
    var peerUID: UInt32? { try? pipe.peerUID() }

    /// Hands the connection to `handler` and starts reading.
    func open(handler: any RPCHandler) {
        guard state.isActive else { return }
        self.handler = handler
        wasOpened = true
        handler.connectionOpened(self)
        guard state.isActive else { return }
        do {
            try pipe.startReading(onRead: { [unowned self] bytes in
                received(bytes)
            }, onEnd: { [unowned self] error in
                readDidEnd(error)
            })
        } catch {
            logger.debug("Could not read from connection", metadata: ["error": "\(error)"])
            close()
        }
    }

    // MARK: Reading

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard case .read(let firstInTurn) = state.readStarted(turn: flushQueue.turn) else { return }
        if firstInTurn { flushQueue.didRead(self) }
        defer {
            switch state.readEnded(queueIsEmpty: queued.isEmpty) {
            case .none: break
            case .flush: flush()
            case .resetFramer: framer = LineFramer(maxLineBytes: framer.maxLineBytes)
            }
            account()
            updateLineClock()
        }
        do {
            try framer.feed(bytes, lending: { line in
                // A handler may have cut this connection off while answering an earlier line.
                guard let handler, state.lineRead(line) == .handle else { return }
                handler.handle(line: line, from: self)
                if state.lineHandled() { closeAfterFlush() }
            })
        } catch {
            logger.info("Closing connection: line too long", metadata: ["limit": "\(error.limit)"])
            // Names the limit and the flag that sets it: the client that sent a
            // large value learns what to change, not just that it was closed.
            reject(RPCError(.limitExceeded,
                            "line too long: more than \(error.limit) bytes (the daemon's maxLineBytes; promised --max-line-bytes sets it)",
                            data: ["limit": "maxLineBytes", "value": .int(error.limit), "flag": "--max-line-bytes"]))
        }
    }

    /// Reads what the client sent since (see ``ReadAhead``). The pipe reads
    /// nothing once reading is paused, ended or closed.
    func readAhead() {
        assert(state.lastReadTurn != flushQueue.turn, "a connection is read again once a turn, at its end")
        pipe.readNow()
    }

    private func readDidEnd(_ error: UVError?) {
        guard state.isActive else { return }
        if let error {
            logger.debug("Connection read failed", metadata: ["error": "\(error)"])
            close()
            return
        }
        if let last = framer.finish(), let handler {
            let action = last.withUnsafeBytes { state.lineRead($0) }
            if action == .handle {
                handler.handle(line: last, from: self)
                if state.lineHandled() { closeAfterFlush() }
            }
        }
        guard let timer = state.endOfStream() else { return }
        account()
        updateLineClock()
        if pipe.peerHasHungUp {
            close()
            return
        }
        arm(timer)
    }

    // MARK: Writing

    /// A long message is queued by reference to `message`, not copied: a
    /// notification goes to every subscriber in the one array it was written in.
    @discardableResult
    func send(_ message: [UInt8]) -> Bool {
        message.withUnsafeBytes { send(line: $0, in: message.count >= OutgoingBytes.sharedFrom ? message : nil) }
    }

    @discardableResult
    func send(line message: UnsafeRawBufferPointer) -> Bool {
        send(line: message, in: nil)
    }

    /// Sends `message`, whose bytes are those of `array` when it is given:
    /// then what waits is kept by reference to it.
    private func send(line message: UnsafeRawBufferPointer, in array: [UInt8]?) -> Bool {
        guard admits(message.count) else { return false }
        switch state.route(queueIsEmpty: queued.isEmpty, isWriting: pipe.isWriting, turn: flushQueue.turn) {
        case .drop:
            return false
        case .writeAtOnce(let endsTurn):
            // Writing the first message at once spares a second visit to
            // this connection later in the turn: with a settlement told to
            // thousands of subscribers, that second pass over connections
            // no longer in cache cost as much as the writes' own work. A
            // pipelining client's later answers still leave together: at
            // the end of the read (`received`) or of the turn.
            // The first write at once of a turn: the turn must end before the loop sleeps.
            if endsTurn { _ = flushQueue.directWriteTurn(after: nil) }
            writeAtOnce(message, in: array)
            return isOpen
        case .queueAndScheduleFlush:
            flushQueue.schedule(self)
        case .queue:
            break
        }
        enqueue(message, in: array)
        account()
        return true
    }

    /// Queues `message` from byte `offset` on: by reference to `array`, when
    /// given, which holds the same bytes.
    private func enqueue(_ message: UnsafeRawBufferPointer, in array: [UInt8]?, from offset: Int = 0) {
        if let array {
            queued.append(shared: array[offset...])
        } else {
            queued.append(UnsafeRawBufferPointer(rebasing: message[offset...]))
        }
    }

    /// Messages in parts longer than this are queued part by part (long
    /// parts by reference), not joined into a line first.
    static let partsQueuedAloneFrom = 64 * 1024

    @discardableResult
    func send(parts: [ArraySlice<UInt8>]) -> Bool {
        let total = parts.reduce(0) { $0 + $1.count }
        // A short message takes the path of a line, which may write it at once.
        guard total > Self.partsQueuedAloneFrom else { return send(joinedLine(parts)) }
        guard admits(total) else { return false }
        let route = state.routeParts(isWriting: pipe.isWriting)
        guard route != .drop else { return false }
        for part in parts { queued.append(shared: part) }
        account()
        if route == .queueAndScheduleFlush { flushQueue.schedule(self) }
        return true
    }

    func hold(bytes: Int) {
        guard admits(bytes, holding: true) else { return }
        account()
    }

    /// Whether `count` more bytes for this client may wait, held or queued:
    /// past `maxOutputBufferBytes` already waiting, the client is not
    /// reading and is cut off (false); past half of it, reading pauses.
    private func admits(_ count: Int, holding: Bool = false) -> Bool {
        let unsent = pipe.writeQueueSize
        switch state.admit(count, outgoing: queued.count + unsent, unsentInLibUV: unsent, now: pipe.loop.now,
                           holding: holding) {
        case .admit:
            return true
        case .refuse:
            return false
        case .cutOff(let backlog, let held):
            logger.info("Cutting off a client that does not read its answers",
                        metadata: ["queued.bytes": "\(backlog - held)", "held.bytes": "\(held)",
                                   "limit": "\(state.maxOutputBufferBytes)"])
            close()
            return false
        case .admitAndPause:
            pipe.pauseReading()
            updateLineClock()
            arm(.stallCheck(everyMilliseconds: ConnectionState.stallCheckMilliseconds))
            return true
        }
    }

    func closeAfterAnswer() {
        state.closeAfterAnswer()
    }

    func lineContinues() {
        guard state.lineContinues() else { return }
        pipe.pauseReading()
        updateLineClock()
    }

    func lineFinished() {
        switch state.lineFinished() {
        case .none: break
        case .closeAfterFlush: closeAfterFlush()
        case .handleHeld: handleHeldLines()
        }
    }

    func release(bytes: Int) {
        state.released(bytes)
        account()
    }

    /// Writes `message` from the caller's bytes, queuing only what the
    /// socket does not take (by reference to `array`, when given).
    private func writeAtOnce(_ message: UnsafeRawBufferPointer, in array: [UInt8]?) {
        do {
            let written = try pipe.tryWrite(message)
            state.handed(written)
            if written == message.count {
                drained()
                return
            }
            enqueue(message, in: array, from: written)
            flush()
            account()
        } catch {
            logger.debug("Connection write failed", metadata: ["error": "\(error)"])
            close()
        }
    }

    /// Sends one error line with a null id, then closes once it is written:
    /// for clients that are refused or whose stream cannot be framed.
    func reject(_ error: RPCError) {
        guard isOpen else { return }
        let answer: JSONValue = .object(["jsonrpc": "2.0", "id": .null, "error": error.json])
        send(answer.serializedLine())
        closeAfterFlush()
    }

    /// Stops reading, writes what is queued (for at most
    /// `timeoutMilliseconds`), then closes.
    func closeAfterFlush(timeoutMilliseconds: UInt64 = ConnectionState.flushTimeoutMilliseconds) {
        guard let deadline = state.closeAfterFlushRequested(timeoutMilliseconds: timeoutMilliseconds) else { return }
        pipe.stopReading()
        flush()
        guard !state.isClosed else { return }
        arm(deadline)
    }

    /// Hands the queued bytes to the socket: as much as it takes at once
    /// (`UVPipe.tryWrite`), the rest in one `uv_write`. Called by ``send(_:)``
    /// for the first message of a turn, by ``received(_:)`` once a read is
    /// handled, by the ``FlushQueue`` before the loop sleeps, and when a
    /// write completes.
    func flush() {
        guard state.flushStarted(isWriting: pipe.isWriting) else { return }
        if queued.isEmpty {
            drained()
            return
        }
        do {
            let pipe = self.pipe
            let written = try queued.withBuffers { (buffers) throws(UVError) in
                try pipe.tryWrite(buffers: UnsafeBufferPointer(buffers))
            }
            state.handed(written)
            if written == queued.count {
                queued.removeAll()
                account()
                drained()
                return
            }
            queued.removeFirst(written)
            state.handed(queued.count)
            swap(&writing, &queued)
            try writing.withBuffers { (buffers) throws(UVError) in
                try pipe.write(buffers: buffers) { [unowned self] error in didWrite(error) }
            }
            account()
        } catch {
            logger.debug("Connection write failed", metadata: ["error": "\(error)"])
            close()
        }
    }

    /// Everything sent so far is in the socket.
    private func drained() {
        switch state.drained() {
        case .none:
            break
        case .close:
            close()
        case .resume(let handleHeld):
            timer?.stop()
            if handleHeld { handleHeldLines() }
        }
    }

    /// Handles the lines held back, in order, until one holds the rest
    /// again; then, all handled, reads again.
    private func handleHeldLines() {
        while let handler, let line = state.nextHeldLine() {
            handler.handle(line: line, from: self)
            if state.lineHandled() { closeAfterFlush() }
        }
        let resumes = state.heldLinesHandled()
        account()
        guard resumes else { return }
        updateLineClock()
        do {
            try pipe.resumeReading()
        } catch {
            logger.debug("Could not read from connection", metadata: ["error": "\(error)"])
            close()
        }
    }

    private func didWrite(_ error: UVError?) {
        guard !state.isClosed else { return }
        if let error {
            logger.debug("Connection write failed", metadata: ["error": "\(error)"])
            close()
            return
        }
        writing.removeAll()
        account()
        flush()
    }

    // MARK: Closing

    /// Closes at once; queued bytes are dropped. `connectionClosed` follows
    /// from the close callback.
    func close() {
        guard !state.isClosed else { return }
        let action = state.closed()
        timer?.close()
        timer = nil
        pipe.close()
        // What the connection buffered no longer counts: the queued bytes
        // and the framer's go now (the framer's once it is done lending a
        // line, if a handler closed the connection while handling it), the
        // bytes of a write in flight with the connection, once libuv has
        // cancelled the write.
        queued.removeAll(keepingCapacityUpTo: 0)
        if action.resetsFramer { framer = LineFramer(maxLineBytes: framer.maxLineBytes) }
        memory.buffered(-action.releasedBytes)
        if action.stopsLineClock { memory.lineEnded(connectionID) }
        memory.connectionClosed()
    }

    // MARK: Memory

    /// Reports to ``memory`` what this connection buffers now.
    private func account() {
        let delta = state.buffered(framer.bufferedByteCount + queued.count + writing.count)
        if delta != 0 { memory.buffered(delta) }
    }

    /// Starts or stops the clock on this connection's unfinished line: it
    /// runs while the framer holds the start of a line and reading goes on.
    private func updateLineClock() {
        switch state.lineClock(framedBytes: framer.bufferedByteCount) {
        case .none: break
        case .start: memory.lineStarted(connectionID)
        case .stop: memory.lineEnded(connectionID)
        }
    }

    /// Closes at once, telling the client why in one error line when the
    /// output stream is between two messages (nothing of an answer half
    /// written). What was queued for it is dropped: the daemon is short
    /// of memory and this client holds much of it.
    func cutOff(_ error: RPCError) {
        guard isOpen else { return }
        logger.info("Cutting off a client: the daemon's buffers are full",
                    metadata: ["buffered.bytes": "\(bufferedBytes)"])
        queued.removeAll(keepingCapacityUpTo: 0)
        if !pipe.isWriting {
            let answer: JSONValue = .object(["jsonrpc": "2.0", "id": .null, "error": error.json])
            let line = answer.serializedLine()
            // Best effort and without blocking: a client that does not read
            // has a full socket and misses it; one that reads gets it whole
            // or, rarely, cut, before the end of the stream.
            _ = line.withUnsafeBytes { try? pipe.tryWrite($0) }
        }
        close()
    }

    /// The client started a line more than `seconds` ago and has not
    /// finished it: one error line, then the connection closes. The start
    /// of the line is freed at once.
    func lineTimedOut(afterSeconds seconds: Int) {
        guard state.isActive else { return }
        logger.info("Closing connection: line not finished in time", metadata: ["timeout.s": "\(seconds)"])
        framer = LineFramer(maxLineBytes: framer.maxLineBytes)
        account()
        updateLineClock()
        reject(RPCError(.limitExceeded,
                        "line not finished within \(seconds) s (the daemon's lineTimeoutSeconds; promised --line-timeout sets it)",
                        data: ["limit": "lineTimeoutSeconds", "value": .int(seconds), "flag": "--line-timeout"]))
    }

    // MARK: The timer

    /// Starts the connection's one timer for `purpose`, replacing what it did.
    private func arm(_ purpose: ConnectionState.Timer) {
        if timer == nil {
            do {
                timer = try UVTimer(loop: pipe.loop)
            } catch {
                logger.info("Could not create a timer", metadata: ["error": "\(error)"])
                close()
                return
            }
        }
        switch purpose {
        case .hangUpPoll(let every):
            timer?.start(afterMilliseconds: every, repeatMilliseconds: every) { [unowned self] in
                if pipe.peerHasHungUp { close() }
            }
        case .stallCheck(let every):
            timer?.start(afterMilliseconds: every, repeatMilliseconds: every) { [unowned self] in
                let bytesSent = state.bytesHanded - pipe.writeQueueSize
                guard state.stallCheck(now: pipe.loop.now, bytesSent: bytesSent) == .cutOff else { return }
                logger.info("Cutting off a client that does not read its answers",
                            metadata: ["queued.bytes": "\(queued.count + pipe.writeQueueSize)",
                                       "stalled.ms": "\(ConnectionState.stallCutOffMilliseconds)"])
                close()
            }
        case .flushDeadline(let after):
            timer?.start(afterMilliseconds: after, repeatMilliseconds: 0) { [unowned self] in
                logger.debug("Closing connection: queued answers not read in time")
                close()
            }
        }
    }
}

@available(*, unavailable)
extension Connection: Sendable {}
