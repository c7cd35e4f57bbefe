import Logging
import PromiseJSON
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
final class Connection: RPCPeer {
    /// Lifecycle; only ever moves down this list.
    enum State: Comparable {
        /// Reading and writing.
        case active
        /// The client shut down its writing side; answers still go out.
        case readClosed
        /// Nothing more is accepted; closes once queued bytes are written.
        case closingAfterFlush
        case closed
    }

    /// How often a half-closed connection checks whether the client is fully gone.
    static let hangUpPollMilliseconds: UInt64 = 200
    /// How long a closing connection waits for a client to read its last bytes.
    static let flushTimeoutMilliseconds: UInt64 = 5_000
    /// How long a paused connection may leave its answers unread before it is cut off.
    static let stallCutOffMilliseconds: UInt64 = 5_000
    /// How often a paused connection checks that its answers are being read.
    static let stallCheckMilliseconds: UInt64 = 500

    let connectionID: UInt64
    private(set) var state: State = .active
    /// Set once the peer passed the uid check and `connectionOpened` was called.
    private(set) var handler: (any RPCHandler)?
    /// True once `connectionOpened` was called (stays true after closing).
    private(set) var wasOpened = false
    /// Let in past `maxConnections`, to settle promises only (see `RPCPeer.isReserved`).
    var isReserved = false
    private let pipe: UVPipe
    // The framer and the buffers are touched for every request and answer;
    // `@exclusivity(unchecked)` spares the runtime's check of each access
    // (as in `Registry`): loop thread only, and no access overlaps another —
    // the handler that `framer.feed` calls never reaches the framer (only
    // libuv's read callbacks do, and libuv does not nest them), and nothing
    // a buffer access calls reaches the buffers.
    @exclusivity(unchecked) private var framer: LineFramer
    private let maxOutputBufferBytes: Int
    private var logger: Logger
    /// Bytes sent and not yet handed to the socket.
    @exclusivity(unchecked) private var queued = OutgoingBytes()
    /// Bytes of messages for this client held back by the journal.
    private var heldBytes = 0
    /// Bytes of the one `uv_write` in flight.
    @exclusivity(unchecked) private var writing = OutgoingBytes()
    private var isFlushScheduled = false
    /// The ``FlushQueue`` turn in which ``send(_:)`` last wrote at once.
    private var lastDirectWriteTurn: UInt64?
    /// Set while the bytes of one read are handled (``received(_:)``): the
    /// first answer to them is written at once, the others when they have
    /// all been handled. The answers to a read then leave as they left when
    /// the ``FlushQueue``'s turns timed every write, without starting and
    /// running its watcher for each request, about 460 instructions of a
    /// create+resolve pair (`scripts/count-instructions.sh daemon`).
    /// `@exclusivity(unchecked)` as the buffers are.
    @exclusivity(unchecked) private var isReceiving = false
    @exclusivity(unchecked) private var wroteWhileReceiving = false
    private let flushQueue: FlushQueue
    private let memory: ConnectionMemory
    /// The bytes this connection last reported to ``memory`` as buffered.
    private(set) var bufferedBytes = 0
    /// Whether this connection's unfinished line is on the clock (``LineDeadlines``).
    private var isLineClockRunning = false
    /// Bytes of ``heldLines`` not yet handled.
    private var heldLineBytes = 0
    /// Set by ``closeAfterAnswer()`` while a line is handled.
    private var closesOnceAnswered = false
    /// The ``FlushQueue`` turn in which this connection was last read.
    private var lastReadTurn: UInt64?
    /// Reading stops while this many bytes wait for the client (half the cut-off limit).
    private let pauseThreshold: Int
    private var isReadPaused = false
    /// Set while the handler goes on with a line in later turns (``lineContinues()``).
    private var isLineUnfinished = false
    /// Whether lines read wait in ``heldLines`` rather than being handled:
    /// answers wait for the client, or a line is still being handled.
    private var holdsLines: Bool { isReadPaused || isLineUnfinished }
    /// Lines read while paused, handled once the answers are out: in order, from `heldStart`.
    private var heldLines: [[UInt8]] = []
    private var heldStart = 0
    /// Bytes handed to the socket or to libuv so far: less what libuv still
    /// queues, it tells a slow reader from a stuck one.
    private var bytesHanded = 0
    private var timer: UVTimer?

    init(id: UInt64, pipe: UVPipe, limits: DaemonLimits, logger: Logger, flushQueue: FlushQueue,
         memory: ConnectionMemory, onClosed: @escaping (Connection) -> Void) {
        connectionID = id
        self.pipe = pipe
        self.flushQueue = flushQueue
        self.memory = memory
        framer = LineFramer(maxLineBytes: limits.maxLineBytes)
        maxOutputBufferBytes = limits.maxOutputBufferBytes
        pauseThreshold = max(1, limits.maxOutputBufferBytes / 2)
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

    var isOpen: Bool { state <= .readClosed }

    /// The uid of the client process, or nil if the socket cannot tell.
    var peerUID: UInt32? { try? pipe.peerUID() }

    /// Hands the connection to `handler` and starts reading.
    func open(handler: any RPCHandler) {
        guard state == .active else { return }
        self.handler = handler
        wasOpened = true
        handler.connectionOpened(self)
        guard state == .active else { return }
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
        guard state == .active else { return }
        let turn = flushQueue.turn
        if lastReadTurn != turn {
            lastReadTurn = turn
            flushQueue.didRead(self)
        }
        isReceiving = true
        wroteWhileReceiving = false
        defer {
            isReceiving = false
            if state == .closed {
                framer = LineFramer(maxLineBytes: framer.maxLineBytes)
            } else if !queued.isEmpty && !isFlushScheduled {
                // The answers after the first, queued by `send(line:)`.
                flush()
            }
            account()
            updateLineClock()
        }
        do {
            try framer.feed(bytes, lending: { line in
                // A handler may have cut this connection off while answering an earlier line.
                guard state == .active, let handler else { return }
                if holdsLines {
                    heldLines.append(Array(line))
                    heldLineBytes += line.count
                } else {
                    handler.handle(line: line, from: self)
                    if closesOnceAnswered && !isLineUnfinished { closeAfterFlush() }
                }
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
        assert(lastReadTurn != flushQueue.turn, "a connection is read again once a turn, at its end")
        pipe.readNow()
    }

    private func readDidEnd(_ error: UVError?) {
        guard state == .active else { return }
        if let error {
            logger.debug("Connection read failed", metadata: ["error": "\(error)"])
            close()
            return
        }
        if let last = framer.finish(), let handler {
            if holdsLines {
                heldLines.append(last)
                heldLineBytes += last.count
            } else {
                handler.handle(line: last, from: self)
                if closesOnceAnswered && !isLineUnfinished { closeAfterFlush() }
            }
        }
        guard state == .active else { return }
        state = .readClosed
        account()
        updateLineClock()
        if pipe.peerHasHungUp {
            close()
            return
        }
        startTimer(every: Self.hangUpPollMilliseconds) { [unowned self] in
            if pipe.peerHasHungUp { close() }
        }
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
        guard isOpen, admits(message.count) else { return false }
        if !isFlushScheduled && !pipe.isWriting {
            // Writing the first message at once spares a second visit to
            // this connection later in the turn: with a settlement told to
            // thousands of subscribers, that second pass over connections
            // no longer in cache cost as much as the writes' own work. A
            // pipelining client's later answers still leave together: at
            // the end of the read (`received`) or of the turn.
            if isReceiving {
                if queued.isEmpty && !wroteWhileReceiving {
                    wroteWhileReceiving = true
                    writeAtOnce(message, in: array)
                    return isOpen
                }
                enqueue(message, in: array)
                account()
                return true
            }
            if queued.isEmpty, let turn = flushQueue.directWriteTurn(after: lastDirectWriteTurn) {
                lastDirectWriteTurn = turn
                writeAtOnce(message, in: array)
                return isOpen
            }
            isFlushScheduled = true
            flushQueue.schedule(self)
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
        guard isOpen, admits(total) else { return false }
        for part in parts { queued.append(shared: part) }
        account()
        // While a read is handled, its end flushes; otherwise before the loop sleeps.
        if !isReceiving && !isFlushScheduled && !pipe.isWriting {
            isFlushScheduled = true
            flushQueue.schedule(self)
        }
        return true
    }

    func hold(bytes: Int) {
        guard isOpen, admits(bytes) else { return }
        heldBytes += bytes
        account()
    }

    /// Whether `count` more bytes for this client may wait, held or queued:
    /// past `maxOutputBufferBytes` already waiting, the client is not
    /// reading and is cut off (false); past half of it, reading pauses.
    private func admits(_ count: Int) -> Bool {
        let backlog = queued.count + pipe.writeQueueSize + heldBytes
        if backlog > maxOutputBufferBytes {
            logger.info("Cutting off a client that does not read its answers",
                        metadata: ["queued.bytes": "\(backlog - heldBytes)", "held.bytes": "\(heldBytes)",
                                   "limit": "\(maxOutputBufferBytes)"])
            close()
            return false
        }
        if !isReadPaused && state == .active && backlog + count > pauseThreshold {
            // Answers pile up faster than the client reads them: stop taking
            // requests until they are out (a pipelining client is slowed down,
            // not cut off).
            pause()
        }
        return true
    }

    func closeAfterAnswer() {
        closesOnceAnswered = true
    }

    func lineContinues() {
        guard state <= .readClosed, !isLineUnfinished else { return }
        isLineUnfinished = true
        pipe.pauseReading()
        updateLineClock()
    }

    func lineFinished() {
        guard isLineUnfinished else { return }
        isLineUnfinished = false
        guard isOpen else { return }
        if closesOnceAnswered { return closeAfterFlush() }
        guard !isReadPaused else { return }
        handleHeldLines()
    }

    func release(bytes: Int) {
        heldBytes = max(0, heldBytes - bytes)
        account()
    }

    /// Writes `message` from the caller's bytes, queuing only what the
    /// socket does not take (by reference to `array`, when given).
    private func writeAtOnce(_ message: UnsafeRawBufferPointer, in array: [UInt8]?) {
        do {
            let written = try pipe.tryWrite(message)
            bytesHanded += written
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
    func closeAfterFlush(timeoutMilliseconds: UInt64 = Connection.flushTimeoutMilliseconds) {
        guard isOpen else { return }
        state = .closingAfterFlush
        pipe.stopReading()
        flush()
        guard state != .closed else { return }
        startTimer(every: 0, after: timeoutMilliseconds) { [unowned self] in
            logger.debug("Closing connection: queued answers not read in time")
            close()
        }
    }

    /// Hands the queued bytes to the socket: as much as it takes at once
    /// (`UVPipe.tryWrite`), the rest in one `uv_write`. Called by ``send(_:)``
    /// for the first message of a turn, by ``received(_:)`` once a read is
    /// handled, by the ``FlushQueue`` before the loop sleeps, and when a
    /// write completes.
    func flush() {
        isFlushScheduled = false
        guard state != .closed, !pipe.isWriting else { return }
        if queued.isEmpty {
            drained()
            return
        }
        do {
            let pipe = self.pipe
            let written = try queued.withBuffers { (buffers) throws(UVError) in
                try pipe.tryWrite(buffers: UnsafeBufferPointer(buffers))
            }
            bytesHanded += written
            if written == queued.count {
                queued.removeAll()
                account()
                drained()
                return
            }
            queued.removeFirst(written)
            bytesHanded += queued.count
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
        if state == .closingAfterFlush {
            close()
        } else if isReadPaused && state == .active && heldBytes <= pauseThreshold {
            resume()
        }
    }

    /// Stops reading, and watches that the client keeps reading its answers.
    private func pause() {
        isReadPaused = true
        pipe.pauseReading()
        updateLineClock()
        var progress = bytesSent
        var stalledTicks: UInt64 = 0
        startTimer(every: Self.stallCheckMilliseconds) { [unowned self] in
            guard isReadPaused, state == .active else { return }
            if bytesSent != progress {
                progress = bytesSent
                stalledTicks = 0
                return
            }
            stalledTicks += 1
            if stalledTicks * Self.stallCheckMilliseconds >= Self.stallCutOffMilliseconds {
                logger.info("Cutting off a client that does not read its answers",
                            metadata: ["queued.bytes": "\(queued.count + pipe.writeQueueSize)",
                                       "stalled.ms": "\(Self.stallCutOffMilliseconds)"])
                close()
            }
        }
    }

    /// Bytes the socket has taken so far.
    private var bytesSent: Int { bytesHanded - pipe.writeQueueSize }

    /// The answers are out: handles the lines held meanwhile (unless they
    /// fill the buffer again), then reads again; a line still being
    /// handled does that when it ends (``lineFinished()``).
    private func resume() {
        isReadPaused = false
        timer?.stop()
        guard !isLineUnfinished else { return }
        handleHeldLines()
    }

    /// Handles the lines held back, in order, until one holds the rest
    /// again; then, all handled, reads again.
    private func handleHeldLines() {
        while heldStart < heldLines.count, !holdsLines, state <= .readClosed, let handler {
            let line = heldLines[heldStart]
            heldLines[heldStart] = []
            heldStart += 1
            heldLineBytes -= line.count
            handler.handle(line: line, from: self)
            if closesOnceAnswered && !isLineUnfinished { closeAfterFlush() }
        }
        if heldStart == heldLines.count {
            heldLines.removeAll()
            heldStart = 0
        }
        account()
        guard !holdsLines, state == .active else { return }
        updateLineClock()
        do {
            try pipe.resumeReading()
        } catch {
            logger.debug("Could not read from connection", metadata: ["error": "\(error)"])
            close()
        }
    }

    private func didWrite(_ error: UVError?) {
        guard state != .closed else { return }
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
        guard state != .closed else { return }
        state = .closed
        timer?.close()
        timer = nil
        pipe.close()
        // What the connection buffered no longer counts: the queued bytes
        // and the framer's go now (the framer's once it is done lending a
        // line, if a handler closed the connection while handling it), the
        // bytes of a write in flight with the connection, once libuv has
        // cancelled the write.
        queued.removeAll(keepingCapacityUpTo: 0)
        if !isReceiving { framer = LineFramer(maxLineBytes: framer.maxLineBytes) }
        heldLines = []
        heldStart = 0
        heldLineBytes = 0
        memory.buffered(-bufferedBytes)
        bufferedBytes = 0
        updateLineClock()
        memory.connectionClosed()
    }

    // MARK: Memory

    /// Reports to ``memory`` what this connection buffers now.
    private func account() {
        guard state != .closed else { return }
        let now = framer.bufferedByteCount + queued.count + writing.count + heldBytes + heldLineBytes
        guard now != bufferedBytes else { return }
        let delta = now - bufferedBytes
        bufferedBytes = now
        memory.buffered(delta)
    }

    /// Starts or stops the clock on this connection's unfinished line: it
    /// runs while the framer holds the start of a line and reading goes on.
    private func updateLineClock() {
        let runs = state == .active && !holdsLines && framer.bufferedByteCount > 0
        guard runs != isLineClockRunning else { return }
        isLineClockRunning = runs
        if runs { memory.lineStarted(connectionID) } else { memory.lineEnded(connectionID) }
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
        guard state == .active else { return }
        logger.info("Closing connection: line not finished in time", metadata: ["timeout.s": "\(seconds)"])
        framer = LineFramer(maxLineBytes: framer.maxLineBytes)
        account()
        updateLineClock()
        reject(RPCError(.limitExceeded,
                        "line not finished within \(seconds) s (the daemon's lineTimeoutSeconds; promised --line-timeout sets it)",
                        data: ["limit": "lineTimeoutSeconds", "value": .int(seconds), "flag": "--line-timeout"]))
    }

    private func startTimer(every repeatMilliseconds: UInt64, after milliseconds: UInt64? = nil,
                            _ body: @escaping () -> Void) {
        if timer == nil {
            do {
                timer = try UVTimer(loop: pipe.loop)
            } catch {
                logger.info("Could not create a timer", metadata: ["error": "\(error)"])
                close()
                return
            }
        }
        timer?.start(afterMilliseconds: milliseconds ?? repeatMilliseconds,
                     repeatMilliseconds: repeatMilliseconds, body)
    }
}

@available(*, unavailable)
extension Connection: Sendable {}
