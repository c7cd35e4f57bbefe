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
final class RunLogShipper {
    /// The longest output waits before it is sent.
    static let interval: Duration = .milliseconds(250)

    /// The session's connection, a new one after a reconnect.
    private let client: () -> PromiseClient
    private let id: String
    /// The daemon's `maxLogBytes` and `maxLineBytes`, asked at the first output.
    private var limits: (logBytes: Int, lineBytes: Int)?
    private var stdout: StepLog?
    private var stderr: StepLog?
    private var lastSent = ContinuousClock.now
    /// Set when sending failed: the daemon is gone, and the session says so.
    private var broken = false

    init(client: @escaping () -> PromiseClient, id: String) {
        self.client = client
        self.id = id
    }

    /// The session has a new connection: sending may work again.
    func reconnected() {
        broken = false
    }

    /// Keeps a chunk of the command's output until the next send.
    func add(_ chunk: ArraySlice<UInt8>, stream: StepStream) {
        guard !broken, !chunk.isEmpty else { return }
        let limits = self.limits ?? askLimits()
        switch stream {
        case .stdout:
            stdout = stdout ?? StepLog(limit: limits.logBytes)
            stdout?.append(chunk)
        case .stderr:
            stderr = stderr ?? StepLog(limit: limits.logBytes)
            stderr?.append(chunk)
        }
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
        guard !broken, let limits else { return }
        for stream in StepStream.allCases {
            guard let log = stream == .stdout ? stdout : stderr, log.total > 0 else { continue }
            var bytes = log.bytes
            // A character cut by the read waits for its end (unless this is the last send).
            let held = final ? [] : Array(bytes.suffix(UTF8Boundary.incompleteSuffixLength(bytes)))
            bytes.removeLast(held.count)
            var next = StepLog(limit: limits.logBytes)
            next.append(held)
            if stream == .stdout { stdout = next } else { stderr = next }
            sendPieces(bytes, stream: stream, skipped: log.dropped, lineBytes: limits.lineBytes)
        }
    }

    /// `bytes` in `log` notifications that each fit in one request line,
    /// even were every byte escaped as `\u00XX`, cut between characters.
    private func sendPieces(_ bytes: [UInt8], stream: StepStream, skipped: Int, lineBytes: Int) {
        let most = max(4, (lineBytes - 1_024) / 6)
        var start = 0
        var skipped = skipped
        while start < bytes.count || skipped > 0 {
            var end = min(bytes.count, start + most)
            // Back to the start of a character (at most 3 continuation bytes).
            while end < bytes.count, end > start + 1, bytes[end] & 0xC0 == 0x80 { end -= 1 }
            var params: [String: JSONValue] = [
                "id": .string(id), "stream": .string(stream.rawValue),
                "data": .string(String(decoding: bytes[start..<end], as: UTF8.self)),
            ]
            if skipped > 0 { params["skipped"] = .int(skipped) }
            do {
                try client().notify("log", params)
            } catch {
                broken = true
                return
            }
            skipped = 0
            start = end
        }
    }

    /// The daemon's limits, asked once; the defaults when it does not say.
    private func askLimits() -> (logBytes: Int, lineBytes: Int) {
        let defaults = DaemonLimits()
        let info = try? client().call("info")["limits"]
        let asked = (logBytes: info?["maxLogBytes"]?.intValue ?? defaults.maxLogBytes,
                     lineBytes: info?["maxLineBytes"]?.intValue ?? defaults.maxLineBytes)
        limits = asked
        return asked
    }
}
