/// When each connection's unfinished request line started, and which ones
/// have run past `DaemonLimits.lineTimeoutSeconds`. A pure value: times are
/// the loop's milliseconds, handed in by the owner, which runs the timer.
///
/// A client that sends the start of a line and never its end holds the
/// bytes it sent (up to `maxLineBytes`) for as long as it stays connected;
/// thousands of them hold gigabytes. A line must be finished within the
/// timeout of its first byte. A connection whose reading is paused (its
/// answers wait to be read) does not count: the rest of its line may be in
/// the socket, unread by the daemon; its clock starts again on resuming.
struct LineDeadlines {
    let timeoutMilliseconds: UInt64
    /// Connection id → when its unfinished line started.
    private var started: [UInt64: UInt64] = [:]

    init(timeoutMilliseconds: UInt64) {
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    var isEmpty: Bool { started.isEmpty }
    var count: Int { started.count }

    /// Connection `id` holds an unfinished line since `now` (kept if it already did).
    mutating func lineStarted(_ id: UInt64, at now: UInt64) {
        if started[id] == nil { started[id] = now }
    }

    /// Connection `id` holds no unfinished line (or no longer counts).
    mutating func lineEnded(_ id: UInt64) {
        started[id] = nil
    }

    /// The connections whose line started `timeoutMilliseconds` or more
    /// before `now`, in the order their lines started; they are forgotten.
    mutating func expired(at now: UInt64) -> [UInt64] {
        let late = started.filter { now >= $0.value && now - $0.value >= timeoutMilliseconds }
            .sorted { $0.value != $1.value ? $0.value < $1.value : $0.key < $1.key }
            .map(\.key)
        for id in late { started[id] = nil }
        return late
    }

    /// How often the owner should look for expired lines: a quarter of the
    /// timeout, so that a line is cut within 1.25 times it, at least every
    /// 50 ms and at most every second.
    var checkIntervalMilliseconds: UInt64 { min(max(timeoutMilliseconds / 4, 50), 1_000) }
}
