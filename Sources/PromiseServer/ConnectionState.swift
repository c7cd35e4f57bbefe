/// The decisions of one ``Connection``, without I/O: whether a line read is
/// handled now or held back, when reading pauses and resumes, whether a
/// message is written at once or queued, when a client is cut off, and when
/// the connection closes. A pure value: ``Connection`` feeds it what
/// happened (bytes read, lines handled, messages sent, bytes written, end of
/// stream, timer ticks) and performs the action each event returns; no
/// socket, timer or handler is touched here, so tests drive it by hand.
///
/// ```
/// active ──end of stream──▶ readClosed ──┐
///   │ └──close after flush──────────────▶ closingAfterFlush ──drained / deadline──▶ closed
///   └──────────────close (error, cut-off, hang-up)─────────────────────────────────▶ closed
/// ```
///
/// Within `active`, reading pauses while answers wait for the client
/// (``isReadPaused``: once more than half of `maxOutputBufferBytes` are
/// queued or held) or while the handler goes on with a line over later
/// turns (``isLineUnfinished``); the lines read meanwhile wait here, in
/// order, and are handed out again (``nextHeldLine()``) once both end. A
/// paused client whose answers make no progress for
/// ``stallCutOffMilliseconds`` is cut off; one past `maxOutputBufferBytes`
/// at the time of a send is cut off at once.
///
/// ```swift
/// var state = ConnectionState(maxOutputBufferBytes: 8 << 20)
/// if case .read = state.readStarted(turn: 1) {
///     // for each line the framer finds:
///     if state.lineRead(line) == .handle { handler.handle(line: line, from: self) }
/// }
/// ```
struct ConnectionState {
    /// Lifecycle; only ever moves down this list.
    enum Phase: Comparable {
        /// Reading and writing.
        case active
        /// The client shut down its writing side; answers still go out.
        case readClosed
        /// Nothing more is accepted; closes once queued bytes are written.
        case closingAfterFlush
        case closed
    }

    /// What the connection's one timer is for when it is armed.
    enum Timer: Equatable {
        /// A half-closed connection checks whether the client is fully gone.
        case hangUpPoll(everyMilliseconds: UInt64)
        /// A paused connection checks that its answers are being read (``stallCheck(now:)``).
        case stallCheck(everyMilliseconds: UInt64)
        /// A closing connection closes if its last bytes are not read by then.
        case flushDeadline(afterMilliseconds: UInt64)
    }

    /// What to do with the bytes of one read.
    enum ReadAction: Equatable {
        /// Nothing: the connection no longer reads.
        case ignore
        /// Frame them; `firstInTurn` when this connection was not read yet
        /// in this loop turn (the ``FlushQueue`` reads it again as the turn ends).
        case read(firstInTurn: Bool)
    }

    /// What to do with one line read.
    enum LineAction: Equatable {
        /// Hand it to the handler, then report ``lineHandled()``.
        case handle
        /// Kept here, in order, for later (``nextHeldLine()``).
        case held
        /// Dropped: the connection was closed or is closing.
        case drop
    }

    /// What to do once a read's bytes are all framed and handled.
    enum ReadEndAction: Equatable {
        case none
        /// Write what the answers to this read queued.
        case flush
        /// The connection closed while the read was handled: drop the framer's bytes now.
        case resetFramer
    }

    /// Whether a message (or held bytes) may wait for the client.
    enum AdmitAction: Equatable {
        /// The connection is closed or closing: drop it.
        case refuse
        /// `backlog` bytes already wait, more than the limit: the client does
        /// not read. Log, then close.
        case cutOff(backlog: Int, held: Int)
        case admit
        /// Admitted, and reading pauses: stop reading and arm ``Timer/stallCheck(everyMilliseconds:)``.
        case admitAndPause
    }

    /// How an admitted message leaves.
    enum Route: Equatable {
        /// The connection closed meanwhile: drop it.
        case drop
        /// Write it now from the caller's bytes (`endsTurn`: the ``FlushQueue``
        /// must run as this loop turn ends, as for the first write of a turn).
        case writeAtOnce(endsTurn: Bool)
        /// Append it to the queue; something already flushes it.
        case queue
        /// Append it to the queue and schedule a flush before the loop sleeps.
        case queueAndScheduleFlush
    }

    /// What to do once everything sent so far is in the socket.
    enum DrainAction: Equatable {
        case none
        /// The connection was closing after its flush: close.
        case close
        /// The answers are out: stop the stall timer, then, with
        /// `handleHeld`, hand out the held lines and read again.
        case resume(handleHeld: Bool)
    }

    /// What to do when the handler no longer goes on with a line.
    enum LineFinishedAction: Equatable {
        case none
        /// The handler asked to close once it answered.
        case closeAfterFlush
        /// Hand out the held lines (``nextHeldLine()``), then ``heldLinesHandled()``.
        case handleHeld
    }

    /// What to do about the clock on an unfinished line (``LineDeadlines``).
    enum LineClockAction: Equatable {
        case none
        case start
        case stop
    }

    /// What to do at a stall check.
    enum StallAction: Equatable {
        case none
        /// No answer byte was read for ``stallCutOffMilliseconds``: log, then close.
        case cutOff
    }

    /// What to do on a close.
    struct CloseAction: Equatable {
        /// Give back what the connection reported to the memory budget.
        var releasedBytes: Int
        /// Drop the framer's bytes now (false while it lends a line; see ``readEnded(queueIsEmpty:)``).
        var resetsFramer: Bool
        /// Stop the clock on an unfinished line.
        var stopsLineClock: Bool
    }

    /// How often a half-closed connection checks whether the client is fully gone.
    static let hangUpPollMilliseconds: UInt64 = 200
    /// How long a closing connection waits for a client to read its last bytes.
    static let flushTimeoutMilliseconds: UInt64 = 5_000
    /// How long a paused connection may leave its answers unread before it is cut off.
    static let stallCutOffMilliseconds: UInt64 = 5_000
    /// How often a paused connection checks that its answers are being read.
    static let stallCheckMilliseconds: UInt64 = 500

    private(set) var phase: Phase = .active
    let maxOutputBufferBytes: Int
    /// Reading stops while this many bytes wait for the client (half the cut-off limit).
    let pauseThreshold: Int
    /// Reading paused because answers wait for the client.
    private(set) var isReadPaused = false
    /// Set while the handler goes on with a line in later turns.
    private(set) var isLineUnfinished = false
    /// Set by ``closeAfterAnswer()``: the connection closes once the line being handled is answered.
    private(set) var closesOnceAnswered = false
    /// Lines read while held, handed out in order from `heldStart`.
    private var heldLines: [[UInt8]] = []
    private var heldStart = 0
    /// Bytes of the held lines not handed out yet.
    private(set) var heldLineBytes = 0
    /// Bytes of messages for this client held back by the journal.
    private(set) var heldBytes = 0
    /// Set while the bytes of one read are handled: the first answer to
    /// them is written at once, the others together once they are all handled.
    private(set) var isReceiving = false
    private var wroteWhileReceiving = false
    /// A flush of this connection waits in the ``FlushQueue``.
    private(set) var isFlushScheduled = false
    /// The loop turn in which a message was last written at once, outside a read.
    private var lastDirectWriteTurn: UInt64?
    /// The loop turn in which this connection was last read.
    private(set) var lastReadTurn: UInt64?
    /// Bytes handed to the socket or to libuv so far: less what libuv still
    /// queues, it tells a slow reader from a stuck one.
    private(set) var bytesHanded = 0
    /// What the socket had taken at the last stall check that saw progress, and when.
    private var stallProgress = 0
    private var stallProgressAt: UInt64 = 0
    /// Whether the clock on an unfinished line runs.
    private(set) var isLineClockRunning = false
    /// The bytes last reported to the memory budget as buffered.
    private(set) var bufferedBytes = 0

    init(maxOutputBufferBytes: Int) {
        self.maxOutputBufferBytes = maxOutputBufferBytes
        pauseThreshold = max(1, maxOutputBufferBytes / 2)
    }

    /// Reading and writing, or half-closed: messages are still accepted.
    var isOpen: Bool { phase <= .readClosed }
    var isActive: Bool { phase == .active }
    var isClosed: Bool { phase == .closed }
    /// Whether lines read wait rather than being handled.
    var holdsLines: Bool { isReadPaused || isLineUnfinished }
    /// How many lines wait to be handled.
    var heldLineCount: Int { heldLines.count - heldStart }

    // MARK: Reading

    /// Bytes were read in loop turn `turn`; ``readEnded(queueIsEmpty:)`` follows.
    mutating func readStarted(turn: UInt64) -> ReadAction {
        guard phase == .active else { return .ignore }
        precondition(!isReceiving, "ConnectionState: a read started while one is handled")
        isReceiving = true
        wroteWhileReceiving = false
        guard lastReadTurn != turn else { return .read(firstInTurn: false) }
        lastReadTurn = turn
        return .read(firstInTurn: true)
    }

    /// The framer found `line` (in a read, or the last one at the end of the stream).
    mutating func lineRead(_ line: UnsafeRawBufferPointer) -> LineAction {
        guard phase == .active else { return .drop }
        guard holdsLines else { return .handle }
        heldLines.append(Array(line))
        heldLineBytes += line.count
        return .held
    }

    /// The handler returned from a line. Returns true when the connection
    /// is to close once its answers are written (``closeAfterFlushRequested()``).
    mutating func lineHandled() -> Bool {
        closesOnceAnswered && !isLineUnfinished
    }

    /// The bytes of the read are handled.
    mutating func readEnded(queueIsEmpty: Bool) -> ReadEndAction {
        precondition(isReceiving, "ConnectionState: a read ended that did not start")
        isReceiving = false
        if phase == .closed { return .resetFramer }
        // The answers after the first, queued while the read was handled.
        return !queueIsEmpty && !isFlushScheduled ? .flush : .none
    }

    /// The client shut down its writing side: no more reading; answers still
    /// go out while the connection checks for the client's full close.
    mutating func endOfStream() -> Timer? {
        guard phase == .active else { return nil }
        phase = .readClosed
        return .hangUpPoll(everyMilliseconds: Self.hangUpPollMilliseconds)
    }

    /// The handler goes on with the current line in later turns: reading
    /// pauses (true) until ``lineFinished()``.
    mutating func lineContinues() -> Bool {
        guard phase <= .readClosed, !isLineUnfinished else { return false }
        isLineUnfinished = true
        return true
    }

    /// The handler is done with the line that continued.
    mutating func lineFinished() -> LineFinishedAction {
        guard isLineUnfinished else { return .none }
        isLineUnfinished = false
        guard isOpen else { return .none }
        if closesOnceAnswered { return .closeAfterFlush }
        return isReadPaused ? .none : .handleHeld
    }

    /// The connection is to close once the line being handled is answered.
    mutating func closeAfterAnswer() {
        closesOnceAnswered = true
    }

    /// The next held line to handle now, or nil: none left, or lines are
    /// held again, or the connection no longer takes lines.
    mutating func nextHeldLine() -> [UInt8]? {
        guard heldStart < heldLines.count, !holdsLines, phase <= .readClosed else { return nil }
        let line = heldLines[heldStart]
        heldLines[heldStart] = []
        heldStart += 1
        heldLineBytes -= line.count
        return line
    }

    /// The held lines were handed out as far as they go. Returns true when
    /// reading resumes.
    mutating func heldLinesHandled() -> Bool {
        if heldStart == heldLines.count {
            heldLines.removeAll()
            heldStart = 0
        }
        return !holdsLines && phase == .active
    }

    // MARK: Writing

    /// A message of `count` bytes (or bytes the journal holds, `holding`) is
    /// for the client, while `outgoing` bytes wait to be written (queued, or
    /// in libuv's queue: `unsentInLibUV`) and `now` is the loop's time.
    mutating func admit(_ count: Int, outgoing: Int, unsentInLibUV: Int, now: @autoclosure () -> UInt64,
                        holding: Bool = false) -> AdmitAction {
        guard phase <= .readClosed else { return .refuse }
        let backlog = outgoing + heldBytes
        if backlog > maxOutputBufferBytes { return .cutOff(backlog: backlog, held: heldBytes) }
        if holding { heldBytes += count }
        guard !isReadPaused && phase == .active && backlog + count > pauseThreshold else { return .admit }
        // Answers pile up faster than the client reads them: stop taking
        // requests until they are out (a pipelining client is slowed down,
        // not cut off).
        isReadPaused = true
        stallProgress = bytesHanded - unsentInLibUV
        stallProgressAt = now()
        return .admitAndPause
    }

    /// How an admitted message of the loop turn `turn` leaves, while the
    /// queue is empty or not and libuv writes or not.
    mutating func route(queueIsEmpty: Bool, isWriting: Bool, turn: @autoclosure () -> UInt64) -> Route {
        guard phase <= .readClosed else { return .drop }
        if isFlushScheduled || isWriting { return .queue }
        if isReceiving {
            // Writing the first answer to a read at once spares a second
            // visit to this connection; the others leave together when the
            // read is handled.
            guard queueIsEmpty && !wroteWhileReceiving else { return .queue }
            wroteWhileReceiving = true
            return .writeAtOnce(endsTurn: false)
        }
        if queueIsEmpty {
            let turn = turn()
            if lastDirectWriteTurn != turn {
                lastDirectWriteTurn = turn
                return .writeAtOnce(endsTurn: true)
            }
        }
        isFlushScheduled = true
        return .queueAndScheduleFlush
    }

    /// How a message queued in parts leaves: never at once.
    mutating func routeParts(isWriting: Bool) -> Route {
        guard phase <= .readClosed else { return .drop }
        // While a read is handled, its end flushes; otherwise before the loop sleeps.
        guard !isReceiving && !isFlushScheduled && !isWriting else { return .queue }
        isFlushScheduled = true
        return .queueAndScheduleFlush
    }

    /// The journal lets go of `count` held bytes (sent or dropped).
    mutating func released(_ count: Int) {
        heldBytes = max(0, heldBytes - count)
    }

    /// A flush starts (from the ``FlushQueue``, a read's end, or a write's
    /// completion). Returns false when there is nothing to do: closed, or a
    /// write is still in flight.
    mutating func flushStarted(isWriting: Bool) -> Bool {
        isFlushScheduled = false
        return phase != .closed && !isWriting
    }

    /// `count` bytes went to the socket or to libuv.
    mutating func handed(_ count: Int) {
        bytesHanded += count
    }

    /// Everything sent so far is in the socket.
    mutating func drained() -> DrainAction {
        if phase == .closingAfterFlush { return .close }
        guard isReadPaused && phase == .active && heldBytes <= pauseThreshold else { return .none }
        isReadPaused = false
        return .resume(handleHeld: !isLineUnfinished)
    }

    /// A stall check of a paused connection at `now`, when the socket has
    /// taken `bytesSent` bytes so far.
    mutating func stallCheck(now: UInt64, bytesSent: Int) -> StallAction {
        guard isReadPaused, phase == .active else { return .none }
        if bytesSent != stallProgress {
            stallProgress = bytesSent
            stallProgressAt = now
            return .none
        }
        return now &- stallProgressAt >= Self.stallCutOffMilliseconds ? .cutOff : .none
    }

    // MARK: Closing

    /// Nothing more is read or accepted; the connection closes once what is
    /// queued is written (flush, then arm the returned deadline), or nil
    /// when it is closing or closed already.
    mutating func closeAfterFlushRequested(timeoutMilliseconds: UInt64 = ConnectionState.flushTimeoutMilliseconds)
        -> Timer? {
        guard isOpen else { return nil }
        phase = .closingAfterFlush
        return .flushDeadline(afterMilliseconds: timeoutMilliseconds)
    }

    /// The connection closes now; what was queued and held is dropped.
    mutating func closed() -> CloseAction {
        precondition(phase != .closed, "ConnectionState: closed twice")
        phase = .closed
        heldLines = []
        heldStart = 0
        heldLineBytes = 0
        let released = bufferedBytes
        bufferedBytes = 0
        let stopsClock = isLineClockRunning
        isLineClockRunning = false
        return CloseAction(releasedBytes: released, resetsFramer: !isReceiving, stopsLineClock: stopsClock)
    }

    // MARK: Memory

    /// The connection's buffers hold `outgoingAndFramed` bytes (framer,
    /// queue, write in flight) besides the held ones: returns the change to
    /// report to the memory budget, 0 when none or closed.
    mutating func buffered(_ outgoingAndFramed: Int) -> Int {
        guard phase != .closed else { return 0 }
        let now = outgoingAndFramed + heldBytes + heldLineBytes
        let delta = now - bufferedBytes
        bufferedBytes = now
        return delta
    }

    /// Whether the clock on the unfinished line runs, the framer holding
    /// `framedBytes` of it: while the connection reads and a line is started.
    mutating func lineClock(framedBytes: Int) -> LineClockAction {
        let runs = phase == .active && !holdsLines && framedBytes > 0
        guard runs != isLineClockRunning else { return .none }
        isLineClockRunning = runs
        return runs ? .start : .stop
    }
}
