import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// Sends the output of `promisectl run`'s command to the daemon as its
/// step's log (the `log` method), so that `promisectl logs ID` shows it as
/// it does a `then … exec` step's.
///
/// Output is gathered and sent at most every ``interval`` while the
/// command runs (so `logs --follow` sees it come), and once more before the
/// step is settled, so the log is complete when the promise settles. Only
/// the last `maxLogBytes` of each stream (the daemon's limit, from `info`)
/// are kept between sends: what was cut is sent as `skipped`, and the
/// daemon counts it as dropped. Each `log` is a notification: no answer to
/// wait for, and a daemon without the method ignores it.
///
/// Bytes that are not UTF-8 are sent as U+FFFD (JSON text is UTF-8); a
/// character cut by a read is held back until its end comes.
///
/// A daemon that goes away loses output: the `log` notifications written
/// to it on its way down, and what its store had not saved yet (up to a
/// second of a running step's log). So output is still gathered while the
/// daemon is gone, the end of what was sent of each stream is kept, and on
/// a new connection the daemon is asked how much of each stream it has
/// (`logs`): what it lacks is sent again before the new output. Its log
/// then has every byte once, where it was: `logs --follow`, which
/// reconnects too, prints each once.
final class RunLogShipper {
    /// The longest output waits before it is sent.
    static let interval: Duration = .milliseconds(250)

    /// The session's connection, a new one after a reconnect.
    private let client: () -> BlockingPromiseClient
    private let id: String
    /// The daemon's `maxLogBytes` and `maxLineBytes`, asked at the first output.
    private var limits: (logBytes: Int, lineBytes: Int)?
    /// Output gathered and not sent yet, by stream.
    private var gathered: [StepStream: StepLog] = [:]
    /// The last `maxLogBytes` sent of each stream, as sent (U+FFFD for bytes
    /// that are not UTF-8): its `total` is where the daemon's log should be.
    private var sent: [StepStream: StepLog] = [:]
    private var lastSent = ContinuousClock.now
    /// Set when sending failed: the daemon is gone, and the session says so.
    private var broken = false
    /// Set on a new connection: the daemon may lack some of what was sent.
    private var unchecked = false

    init(client: @escaping () -> BlockingPromiseClient, id: String) {
        self.client = client
        self.id = id
    }

    /// The session has a new connection: sending may work again.
    func reconnected() {
        broken = false
        unchecked = true
    }

    /// Keeps a chunk of the command's output until the next send, also while
    /// the daemon is gone.
    func add(_ chunk: ArraySlice<UInt8>, stream: StepStream) {
        guard !chunk.isEmpty else { return }
        let limits = self.limits ?? (broken ? Self.defaultLimits : askLimits())
        gathered[stream, default: StepLog(limit: limits.logBytes)].append(chunk)
    }

    /// Sends what was gathered if ``interval`` has passed since the last send.
    func sendIfDue() {
        guard ContinuousClock.now - lastSent >= Self.interval else { return }
        send(final: false)
    }

    /// Sends everything gathered, a cut character's start included: before settling.
    func sendAll() {
        send(final: true)
    }

    private func send(final: Bool) {
        lastSent = .now
        guard !broken, !gathered.isEmpty || !sent.isEmpty else { return }
        // Not asked yet when all the output came while the daemon was gone.
        let limits = self.limits ?? askLimits()
        if unchecked { sendAgainWhatWasLost(limits) }
        for stream in StepStream.allCases where !broken {
            guard let log = gathered[stream], log.total > 0 else { continue }
            var bytes = log.bytes
            // A character cut by the read waits for its end (unless this is the last send).
            let held = final ? [] : Array(bytes.suffix(UTF8Boundary.incompleteSuffixLength(bytes)))
            bytes.removeLast(held.count)
            // What the connection failed to take stays, to go on the next one.
            let unsent = sendPieces(bytes, stream: stream, skipped: log.dropped, lineBytes: limits.lineBytes)
            gathered[stream] = StepLog(limit: limits.logBytes, bytes: Array(unsent.bytes) + held, dropped: unsent.skipped)
        }
    }

    /// On a new connection: sends again what was sent of each stream past
    /// what the daemon has, as far as the kept end of it reaches (the rest
    /// is sent as skipped: the daemon counts it as cut).
    private func sendAgainWhatWasLost(_ limits: (logBytes: Int, lineBytes: Int)) {
        unchecked = false
        guard !sent.isEmpty else { return }
        let answer: JSONValue
        do {
            answer = try client().call("logs", ["id": .string(id)])
        } catch is RPCError {
            // No log to fill (the promise is gone, or an older daemon): settling tells.
            return
        } catch {
            broken = true
            unchecked = true
            return
        }
        for stream in StepStream.allCases {
            guard let log = sent[stream], let has = answer[stream.rawValue + "Bytes"]?.intValue, has < log.total
            else { continue }
            let lost = log.total - has
            let again = Array(log.bytes.suffix(lost))
            // Back to where the daemon is; sending again moves it forward.
            sent[stream] = StepLog(limit: limits.logBytes, bytes: [], dropped: has)
            sendPieces(again, stream: stream, skipped: lost - again.count, lineBytes: limits.lineBytes)
            if broken {
                // The next connection asks again, and sends again from what that daemon has.
                sent[stream] = log
                return
            }
        }
    }

    /// Notes `text` sent after `skipped` lost bytes, to send it again if the daemon loses it.
    private func noteSent(_ text: String, skipped: Int, stream: StepStream) {
        let limit = limits?.logBytes ?? Self.defaultLimits.logBytes
        sent[stream, default: StepLog(limit: limit)].skip(skipped)
        sent[stream]?.append(text.utf8)
    }

    /// `bytes` in `log` notifications that each fit in one request line,
    /// even were every byte escaped as `\u00XX`, cut between characters.
    /// Returns what was not sent when the connection failed (nothing, else):
    /// the bytes from there on, and the skipped count not told yet.
    @discardableResult
    private func sendPieces(
        _ bytes: [UInt8], stream: StepStream, skipped: Int, lineBytes: Int
    ) -> (bytes: ArraySlice<UInt8>, skipped: Int) {
        let most = max(4, (lineBytes - 1_024) / 6)
        var start = 0
        var skipped = skipped
        while start < bytes.count || skipped > 0 {
            var end = min(bytes.count, start + most)
            // Back to the start of a character (at most 3 continuation bytes).
            while end < bytes.count, end > start + 1, bytes[end] & 0xC0 == 0x80 { end -= 1 }
            let text = String(decoding: bytes[start..<end], as: UTF8.self)
            var params: [String: JSONValue] = ["id": .string(id), "stream": .string(stream.rawValue), "data": .string(text)]
            if skipped > 0 { params["skipped"] = .int(skipped) }
            do {
                try client().notify("log", params)
            } catch {
                broken = true
                return (bytes[start...], skipped)
            }
            noteSent(text, skipped: skipped, stream: stream)
            skipped = 0
            start = end
        }
        return ([], 0)
    }

    /// The daemon's limits, asked once; the defaults when it does not say.
    private func askLimits() -> (logBytes: Int, lineBytes: Int) {
        let info = try? client().call("info")["limits"]
        let asked = (logBytes: info?["maxLogBytes"]?.intValue ?? Self.defaultLimits.logBytes,
                     lineBytes: info?["maxLineBytes"]?.intValue ?? Self.defaultLimits.lineBytes)
        limits = asked
        return asked
    }

    /// The limits of a daemon that does not say (or is not there to ask).
    private static let defaultLimits = (logBytes: DaemonLimits().maxLogBytes, lineBytes: DaemonLimits().maxLineBytes)
}
