@testable import PromiseServer
import Testing

/// The decisions of a server connection, fed events by hand: reading and
/// held lines, back-pressure, writing at once or queued, half-close, close
/// after answer or flush, stall and over-limit cut-offs. No socket, no
/// thread, no loop.
@Suite("connection state")
struct ConnectionStateTests {
    /// Output limit of the machines below: reading pauses past 500 bytes waiting.
    static let limit = 1_000

    private static func read(_ state: inout ConnectionState, _ text: String) -> ConnectionState.LineAction {
        Array(text.utf8).withUnsafeBytes { state.lineRead($0) }
    }

    /// The held lines handed out now, as text.
    private static func handOut(_ state: inout ConnectionState) -> [String] {
        var lines: [String] = []
        while let line = state.nextHeldLine() { lines.append(String(decoding: line, as: UTF8.self)) }
        return lines
    }

    // MARK: Reading

    @Test("lines read while active are handled; the first read of a turn is reported once")
    func linesHandledAndTurnsReported() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.readStarted(turn: 1) == .read(firstInTurn: true))
        #expect(Self.read(&state, "a") == .handle)
        #expect(state.lineHandled() == false)
        #expect(state.readEnded(queueIsEmpty: true) == .none)
        #expect(state.readStarted(turn: 1) == .read(firstInTurn: false))
        #expect(state.readEnded(queueIsEmpty: true) == .none)
        #expect(state.readStarted(turn: 2) == .read(firstInTurn: true))
        #expect(state.lastReadTurn == 2)
    }

    @Test("past half the output limit, reading pauses and the lines read meanwhile are held, then handed out in order")
    func pauseHoldsLinesThenResumesInOrder() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        _ = state.readStarted(turn: 1)
        #expect(Self.read(&state, "first") == .handle)
        // The answer to "first" passes 500 bytes waiting.
        #expect(state.admit(300, outgoing: 250, unsentInLibUV: 250, now: 0) == .admitAndPause)
        #expect(state.isReadPaused)
        #expect(Self.read(&state, "second") == .held)
        #expect(Self.read(&state, "third") == .held)
        #expect(state.heldLineCount == 2)
        #expect(state.heldLineBytes == 11)
        #expect(state.buffered(0) == 11)
        #expect(state.readEnded(queueIsEmpty: false) == .flush)
        // Paused already: more answers do not pause again.
        #expect(state.admit(10, outgoing: 600, unsentInLibUV: 0, now: 0) == .admit)
        #expect(Self.handOut(&state).isEmpty)

        #expect(state.flushStarted(isWriting: false) == true)
        #expect(state.drained() == .resume(handleHeld: true))
        #expect(Self.handOut(&state) == ["second", "third"])
        #expect(state.heldLineBytes == 0)
        #expect(state.heldLinesHandled() == true)
        #expect(state.buffered(0) == -11)
    }

    @Test("a held line whose answer pauses reading again stops the hand-out; the rest wait, in order")
    func handOutStopsWhenPausedAgain() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        _ = state.readStarted(turn: 1)
        #expect(state.admit(600, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
        for line in ["1", "2", "3"] { #expect(Self.read(&state, line) == .held) }
        _ = state.readEnded(queueIsEmpty: false)
        #expect(state.drained() == .resume(handleHeld: true))
        #expect(state.nextHeldLine() == Array("1".utf8))
        #expect(state.admit(600, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
        #expect(state.nextHeldLine() == nil)
        #expect(state.heldLinesHandled() == false)
        #expect(state.heldLineCount == 2)
        #expect(state.drained() == .resume(handleHeld: true))
        #expect(Self.handOut(&state) == ["2", "3"])
        #expect(state.heldLinesHandled() == true)
        #expect(state.heldLineCount == 0)
    }

    @Test("bytes the journal holds count towards the pause and keep reading paused until released")
    func heldBytesPauseUntilReleased() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.admit(400, outgoing: 0, unsentInLibUV: 0, now: 0, holding: true) == .admit)
        #expect(state.heldBytes == 400)
        #expect(state.admit(200, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
        #expect(state.admit(200, outgoing: 0, unsentInLibUV: 0, now: 0, holding: true) == .admit)
        #expect(state.heldBytes == 600)
        // The queue is written, but 600 held bytes still wait: no resume.
        #expect(state.drained() == .none)
        state.released(600)
        #expect(state.heldBytes == 0)
        #expect(state.drained() == .resume(handleHeld: true))
        state.released(5)
        #expect(state.heldBytes == 0)
    }

    @Test("more than the output limit already waiting cuts the client off, held bytes included")
    func overLimitCutOff() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.admit(700, outgoing: 0, unsentInLibUV: 0, now: 0, holding: true) == .admitAndPause)
        #expect(state.admit(10, outgoing: 300, unsentInLibUV: 100, now: 0) == .admit)
        #expect(state.admit(10, outgoing: 301, unsentInLibUV: 100, now: 0) == .cutOff(backlog: 1_001, held: 700))
        // One answer larger than the limit is accepted when little waits.
        var reader = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(reader.admit(5_000, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
    }

    // MARK: Writing

    @Test("while a read is handled, its first answer is written at once and the others queued for the read's end")
    func firstAnswerOfAReadAtOnce() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        _ = state.readStarted(turn: 1)
        #expect(state.route(queueIsEmpty: true, isWriting: false, turn: 1) == .writeAtOnce(endsTurn: false))
        #expect(state.route(queueIsEmpty: true, isWriting: false, turn: 1) == .queue)
        #expect(state.route(queueIsEmpty: false, isWriting: false, turn: 1) == .queue)
        #expect(state.readEnded(queueIsEmpty: false) == .flush)
        // The next read's first answer leaves at once again.
        _ = state.readStarted(turn: 1)
        #expect(state.route(queueIsEmpty: true, isWriting: false, turn: 1) == .writeAtOnce(endsTurn: false))
        #expect(state.readEnded(queueIsEmpty: true) == .none)
    }

    @Test("outside a read, the first message of a turn is written at once, later ones wait for the turn's end")
    func firstMessageOfATurnAtOnce() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.route(queueIsEmpty: true, isWriting: false, turn: 7) == .writeAtOnce(endsTurn: true))
        #expect(state.route(queueIsEmpty: true, isWriting: false, turn: 7) == .queueAndScheduleFlush)
        #expect(state.isFlushScheduled)
        #expect(state.route(queueIsEmpty: false, isWriting: false, turn: 7) == .queue)
        #expect(state.flushStarted(isWriting: false) == true)
        #expect(!state.isFlushScheduled)
        #expect(state.route(queueIsEmpty: true, isWriting: false, turn: 8) == .writeAtOnce(endsTurn: true))
        // While libuv writes, everything queues behind it; its completion flushes.
        #expect(state.route(queueIsEmpty: true, isWriting: true, turn: 9) == .queue)
        #expect(state.flushStarted(isWriting: true) == false)
    }

    @Test("a message in parts is queued, never written at once; a read's end or the turn's end flushes it")
    func partsAreQueued() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.routeParts(isWriting: false) == .queueAndScheduleFlush)
        #expect(state.routeParts(isWriting: false) == .queue)
        #expect(state.flushStarted(isWriting: false) == true)
        _ = state.readStarted(turn: 1)
        #expect(state.routeParts(isWriting: false) == .queue)
        #expect(state.readEnded(queueIsEmpty: false) == .flush)
        #expect(state.routeParts(isWriting: true) == .queue)
    }

    // MARK: Half-close and closing

    @Test("end of stream stops reading but answers still go out, and the connection polls for the full close")
    func endOfStreamWhileAnswersWait() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.admit(600, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
        #expect(state.endOfStream() == .hangUpPoll(everyMilliseconds: ConnectionState.hangUpPollMilliseconds))
        #expect(state.phase == .readClosed)
        #expect(state.isOpen)
        #expect(state.endOfStream() == nil)
        #expect(state.readStarted(turn: 1) == .ignore)
        #expect(Self.read(&state, "late") == .drop)
        #expect(state.admit(10, outgoing: 600, unsentInLibUV: 0, now: 0) == .admit)
        #expect(state.route(queueIsEmpty: false, isWriting: false, turn: 1) == .queueAndScheduleFlush)
        // Written out: nothing to resume or close, the client may still read more.
        #expect(state.drained() == .none)
        #expect(state.lineClock(framedBytes: 10) == .none)
    }

    @Test("close after flush: nothing more is read or accepted, and the connection closes once drained")
    func closeAfterFlushClosesWhenDrained() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.closeAfterFlushRequested() == .flushDeadline(afterMilliseconds: ConnectionState.flushTimeoutMilliseconds))
        #expect(state.closeAfterFlushRequested(timeoutMilliseconds: 10) == nil)
        #expect(!state.isOpen)
        #expect(state.readStarted(turn: 1) == .ignore)
        #expect(state.admit(1, outgoing: 0, unsentInLibUV: 0, now: 0) == .refuse)
        #expect(state.route(queueIsEmpty: true, isWriting: false, turn: 1) == .drop)
        #expect(state.routeParts(isWriting: false) == .drop)
        #expect(state.flushStarted(isWriting: false) == true)
        #expect(state.drained() == .close)
        let action = state.closed()
        #expect(state.isClosed)
        #expect(action == .init(releasedBytes: 0, resetsFramer: true, stopsLineClock: false))
        #expect(state.flushStarted(isWriting: false) == false)
    }

    @Test("close after answer closes once the line is handled, or once a continued line finishes")
    func closeAfterAnswer() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        _ = state.readStarted(turn: 1)
        #expect(Self.read(&state, "bye") == .handle)
        #expect(state.lineContinues() == true)
        state.closeAfterAnswer()
        #expect(state.lineHandled() == false)
        _ = state.readEnded(queueIsEmpty: true)
        #expect(state.lineFinished() == .closeAfterFlush)

        var direct = ConnectionState(maxOutputBufferBytes: Self.limit)
        direct.closeAfterAnswer()
        #expect(direct.lineHandled() == true)
    }

    @Test("a line that continues over turns holds the next lines until it finishes, and not past a pause")
    func lineContinuesHoldsLines() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        _ = state.readStarted(turn: 1)
        #expect(Self.read(&state, "long") == .handle)
        #expect(state.lineContinues() == true)
        #expect(state.lineContinues() == false)
        #expect(Self.read(&state, "next") == .held)
        _ = state.readEnded(queueIsEmpty: true)
        #expect(state.nextHeldLine() == nil)
        #expect(state.lineFinished() == .handleHeld)
        #expect(state.lineFinished() == .none)
        #expect(Self.handOut(&state) == ["next"])
        #expect(state.heldLinesHandled() == true)

        // Paused too: the drain resumes without handing out; the line's end does.
        #expect(state.lineContinues() == true)
        #expect(state.admit(600, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
        #expect(state.drained() == .resume(handleHeld: false))
        #expect(state.lineFinished() == .handleHeld)
        // And the other way round: the line ends first, the drain hands out.
        #expect(state.lineContinues() == true)
        #expect(state.admit(600, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
        #expect(state.lineFinished() == .none)
        #expect(state.drained() == .resume(handleHeld: true))
    }

    @Test("a cut-off while a line continues drops the held lines; the line's end then does nothing")
    func cutOffWhileALineContinues() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        _ = state.readStarted(turn: 1)
        #expect(Self.read(&state, "long") == .handle)
        #expect(state.lineContinues() == true)
        #expect(Self.read(&state, "held") == .held)
        #expect(state.buffered(100) == 104)
        let action = state.closed()
        #expect(action == .init(releasedBytes: 104, resetsFramer: false, stopsLineClock: false))
        #expect(state.heldLineCount == 0)
        #expect(state.heldLineBytes == 0)
        #expect(state.readEnded(queueIsEmpty: true) == .resetFramer)
        #expect(state.lineFinished() == .none)
        #expect(state.nextHeldLine() == nil)
        #expect(state.buffered(50) == 0)
        #expect(state.lineContinues() == false)
    }

    // MARK: Stalls

    @Test("a paused client whose answers make no progress for the stall limit is cut off")
    func stalledReaderCutOff() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        state.handed(600)
        #expect(state.admit(600, outgoing: 600, unsentInLibUV: 600, now: 1_000) == .admitAndPause)
        let step = ConnectionState.stallCheckMilliseconds
        var now: UInt64 = 1_000
        while now + step < 1_000 + ConnectionState.stallCutOffMilliseconds {
            now += step
            #expect(state.stallCheck(now: now, bytesSent: 0) == .none)
        }
        #expect(state.stallCheck(now: 1_000 + ConnectionState.stallCutOffMilliseconds, bytesSent: 0) == .cutOff)
    }

    @Test("a slow reader that makes progress at every check is never cut off")
    func slowButProgressingReaderKept() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.admit(600, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
        var now: UInt64 = 0
        for sent in 1...100 {
            now += ConnectionState.stallCheckMilliseconds
            #expect(state.stallCheck(now: now, bytesSent: sent) == .none)
        }
        // Then it stops reading: cut off a stall limit after its last progress.
        #expect(state.stallCheck(now: now + ConnectionState.stallCutOffMilliseconds - 1, bytesSent: 100) == .none)
        #expect(state.stallCheck(now: now + ConnectionState.stallCutOffMilliseconds, bytesSent: 100) == .cutOff)
    }

    @Test("stall checks do nothing once reading resumed or the client half-closed")
    func stallChecksOnlyWhilePaused() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.stallCheck(now: 100_000, bytesSent: 0) == .none)
        #expect(state.admit(600, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
        #expect(state.drained() == .resume(handleHeld: true))
        #expect(state.stallCheck(now: 100_000, bytesSent: 0) == .none)
        #expect(state.admit(600, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
        _ = state.endOfStream()
        #expect(state.stallCheck(now: 100_000, bytesSent: 0) == .none)
    }

    // MARK: Memory and the line clock

    @Test("buffered bytes are reported as changes, and all of them are given back on close")
    func bufferedReportedAsChanges() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.buffered(0) == 0)
        #expect(state.buffered(40) == 40)
        #expect(state.buffered(40) == 0)
        #expect(state.admit(10, outgoing: 0, unsentInLibUV: 0, now: 0, holding: true) == .admit)
        #expect(state.buffered(30) == 0)
        #expect(state.bufferedBytes == 40)
        #expect(state.closed().releasedBytes == 40)
        #expect(state.bufferedBytes == 0)
    }

    @Test("the clock on an unfinished line runs while reading goes on, stops when lines are held or on close")
    func lineClock() {
        var state = ConnectionState(maxOutputBufferBytes: Self.limit)
        #expect(state.lineClock(framedBytes: 0) == .none)
        #expect(state.lineClock(framedBytes: 5) == .start)
        #expect(state.lineClock(framedBytes: 9) == .none)
        #expect(state.admit(600, outgoing: 0, unsentInLibUV: 0, now: 0) == .admitAndPause)
        #expect(state.lineClock(framedBytes: 9) == .stop)
        #expect(state.drained() == .resume(handleHeld: true))
        #expect(state.lineClock(framedBytes: 9) == .start)
        #expect(state.closed().stopsLineClock)
        #expect(state.lineClock(framedBytes: 9) == .none)
    }

    // MARK: Impossible transitions

    @Test("closing twice is a precondition failure")
    func doubleCloseTraps() async {
        await #expect(processExitsWith: .failure) {
            var state = ConnectionState(maxOutputBufferBytes: 1_000)
            _ = state.closed()
            _ = state.closed()
        }
    }

    @Test("a read that ends without starting, or starts inside another, is a precondition failure")
    func unmatchedReadTraps() async {
        await #expect(processExitsWith: .failure) {
            var state = ConnectionState(maxOutputBufferBytes: 1_000)
            _ = state.readEnded(queueIsEmpty: true)
        }
        await #expect(processExitsWith: .failure) {
            var state = ConnectionState(maxOutputBufferBytes: 1_000)
            _ = state.readStarted(turn: 1)
            _ = state.readStarted(turn: 1)
        }
    }
}
