import Glibc
import PromiseJSON

/// Every bound the daemon enforces, in one place: the server reads the
/// connection-side ones, the registry the rest, and `info` reports them all.
/// Going past one is answered with -32004 (limit exceeded).
public struct DaemonLimits: Sendable, Hashable {
    /// Longest accepted line, in bytes, without its newline.
    public var maxLineBytes: Int = 1 << 20
    /// Bytes queued for a client that is not reading; past this it is cut off.
    public var maxOutputBufferBytes: Int = 8 << 20
    public var maxConnections: Int = 1024
    /// Bytes buffered for all clients together: unfinished request lines,
    /// requests held back, and answers and notifications not yet written.
    /// Past it the connections holding the most are closed, largest first,
    /// with a -32004 error line (`data.limit` "maxBufferedBytes") when one
    /// can still be written, until a quarter of it is free again. Default:
    /// ``defaultMaxBufferedBytes(physicalMemory:)`` of this machine.
    public var maxBufferedBytes: Int = DaemonLimits.defaultMaxBufferedBytes(physicalMemory: DaemonLimits.physicalMemory)
    /// Seconds a client may take to finish a line it started: past it the
    /// connection gets a -32004 error line (`data.limit` "lineTimeoutSeconds")
    /// and is closed, and the bytes it held are freed.
    public var lineTimeoutSeconds: Int = 30
    public var maxPromises: Int = 1_000_000
    /// Subscriptions held by one connection.
    public var maxSubscriptionsPerConnection: Int = 100_000
    /// Pending `wait` requests held by one connection.
    public var maxWaitersPerConnection: Int = 10_000
    /// Requests in one JSON-RPC batch.
    public var maxBatchSize: Int = 1_000
    /// How deeply a request's params (and so any value stored) may nest; an
    /// `exec` command's JSON output nested deeper is kept as text.
    public var maxValueDepth: Int = 128
    /// Bytes of stdout (and of the end of stderr) kept from a `then … exec` process.
    public var maxProcessOutputBytes: Int = 1 << 20
    /// Processes started by `then … exec` running at once: the limit of the
    /// `default` pool, the one of steps that name no pool (docs/PROTOCOL.md, "Pools").
    public var maxRunningProcesses: Int = 256
    /// The other pools at start (`promised --pool NAME=N`), by name: their limits.
    public var pools: [String: Int] = [:]
    /// Turns waiting for a slot, over all pools: queued `then … exec` steps
    /// and `pool.acquire` requests. Past it, a `then … exec` request and a
    /// `pool.acquire` get -32004, and a step whose parent settles is rejected
    /// with that code. Each queued step holds its parent's value (shared) and
    /// its command; 100,000 of them are a few tens of MB.
    public var maxQueued: Int = 100_000
    /// Pools there may be, the `default` one included (`pool.set` makes them).
    public var maxPools: Int = 1_000
    /// How long a cancelled exec process has between SIGTERM and SIGKILL.
    public var killGraceMilliseconds: UInt64 = 2_000
    /// Whether a clean stop (SIGTERM, SIGINT) stops the running `then … exec`
    /// commands and rejects their steps (`promised --stop-steps`). By default
    /// it leaves them running under their monitors, and the next daemon on
    /// the same store settles them (``Registry/stepOutputFolder``).
    public var stopStepsAtStop = false

    // Bounds on the values the daemon makes itself (combinators, reasons, exec input).

    /// Bytes of JSON text a value made by combining others may take: an
    /// `all` or `allSettled` whose value would be longer is rejected
    /// (reason code -32004, `data.limit` "maxValueBytes"), and so is a
    /// `then … exec` child whose input would be, before its command starts.
    ///
    /// Without it, an `all` over one 1 MB value repeated 800 times (a 3 KB
    /// request) made an 800 MB value, and an `allSettled` over it 20,000
    /// times a 20 GB one that the store writer died allocating. 16 MiB holds
    /// sixteen values of the largest a request can carry (`maxLineBytes`),
    /// and keeps every record, answer line and stored row that carries one
    /// value far inside what reads them: the client's 256 MiB line limit
    /// and SQLite's 1 GB limit on a row.
    public var maxValueBytes: Int = 16 << 20
    /// Bytes of JSON text of a reason the daemon makes from other reasons
    /// (`any` when every input failed, `all` with `all-errors`). A longer
    /// one, or one nesting deeper than `maxValueDepth`, keeps its innermost
    /// causes' ids and messages and says what it left out
    /// (`data.truncated`, `data.omitted`); see ``RemoteRejection/bounded(maxDepth:maxBytes:)``.
    ///
    /// A reason is read by people and by `on: rejected` commands: 64 KiB
    /// lists about a thousand causes, and each level of a chain of `any`
    /// stays that size instead of growing (200 levels once nested past the
    /// JSON parser's 512 levels, and the daemon could not restart).
    public var maxReasonBytes: Int = 64 << 10

    // Limits that keep a full daemon usable.
    /// Connections let in past `maxConnections`, to settle promises only:
    /// on them `wait` (of a pending promise) and `subscribe` get -32004, so
    /// that a client which would release waiters is served while waiters
    /// fill the table. 0 refuses every client past `maxConnections`.
    public var reservedConnections: Int = 64
    /// Pending `wait` requests, over all connections, for ids no promise has yet.
    public var maxWaitersForUncreatedIDs: Int = 100_000
    /// Subscriptions, over all connections, to ids no promise has yet.
    public var maxSubscriptionsToUncreatedIDs: Int = 100_000

    // Bounds on what one answer holds.
    /// Ids a record lists under `children` (the first ones, in creation
    /// order); `childrenOmitted` counts the others, which `list` with
    /// `parent` pages through. A promise may have a million `then`
    /// children: listed in full, every answer and notification about it
    /// would carry 256 MB of ids.
    public var maxRecordChildren: Int = 1_000
    /// Bytes of JSON text of one batch's answer. A member whose answer
    /// would take it past this gets -32004 instead (`data.limit`
    /// "maxBatchAnswerBytes"; its request was carried out). Without it, a
    /// batch of 1,000 `get`s of one 16 MiB value made a 16 GB line. 64 MiB
    /// takes four of the largest values, and 200 `then` children of a 200 KB
    /// one in one line, and stays far inside a client's 256 MiB line limit.
    public var maxBatchAnswerBytes: Int = 64 << 20
    /// Bytes kept of each output stream of a step (`then … exec`, `promisectl
    /// run`): the last ones, for `logs`. A step holds at most twice this
    /// (stdout and stderr), in memory and in the store. 0 keeps no output.
    public var maxLogBytes: Int = 64 << 10
    /// Bytes of output all steps' logs hold in memory together. Past it the
    /// logs of settled steps let go of their output, those that settled
    /// longest ago first (then, if need be, the log being written): their
    /// counts remain and `logs` shows them cut. Without it a client writing
    /// to the logs of a million pending promises, or a day of steps kept by
    /// `--retain`, could hold 128 KiB each.
    public var maxTotalLogBytes: Int = 256 << 20
    /// The largest `maxLogBytes` the daemon takes: a step's log is one
    /// stored row and one `logs` answer line, which must also fit in
    /// `maxOutputBufferBytes` (see ``logAnswerBytes(maxLogBytes:)``).
    public static let maxLogBytesCeiling = 16 << 20

    /// The largest `maxLogBytes` whose `logs` answer fits in
    /// `outputBufferBytes`: two streams, each byte escaped as `\u00XX` at
    /// worst, and the rest of the answer (ids up to 256 bytes).
    public static func maxLogBytes(fitting outputBufferBytes: Int) -> Int {
        max(0, (outputBufferBytes - 2_048) / 12)
    }

    public init() {}

    /// A sixteenth of `physicalMemory`, at least 64 MiB and at most 2 GiB:
    /// enough for hundreds of clients at their own limits, far from what
    /// would push the machine into swapping or the OOM killer.
    public static func defaultMaxBufferedBytes(physicalMemory: Int) -> Int {
        min(max(physicalMemory / 16, 64 << 20), 2 << 30)
    }

    /// This machine's physical memory in bytes (0 if the system does not say).
    public static var physicalMemory: Int {
        let pages = sysconf(Int32(_SC_PHYS_PAGES))
        let pageSize = sysconf(Int32(_SC_PAGESIZE))
        guard pages > 0, pageSize > 0 else { return 0 }
        return pages.multipliedReportingOverflow(by: pageSize).overflow ? Int.max : pages * pageSize
    }

    /// The limits as `info` reports them.
    public var json: JSONValue {
        .object([
            "maxLineBytes": .int(maxLineBytes),
            "maxOutputBufferBytes": .int(maxOutputBufferBytes),
            "maxConnections": .int(maxConnections),
            "maxBufferedBytes": .int(maxBufferedBytes),
            "lineTimeoutSeconds": .int(lineTimeoutSeconds),
            "maxPromises": .int(maxPromises),
            "maxSubscriptionsPerConnection": .int(maxSubscriptionsPerConnection),
            "maxWaitersPerConnection": .int(maxWaitersPerConnection),
            "maxBatchSize": .int(maxBatchSize),
            "maxValueDepth": .int(maxValueDepth),
            "maxProcessOutputBytes": .int(maxProcessOutputBytes),
            "maxRunningProcesses": .int(maxRunningProcesses),
            "maxQueued": .int(maxQueued),
            "maxPools": .int(maxPools),
            "killGraceMilliseconds": .int(Int(killGraceMilliseconds)),
            "maxValueBytes": .int(maxValueBytes),
            "maxReasonBytes": .int(maxReasonBytes),
            "reservedConnections": .int(reservedConnections),
            "maxWaitersForUncreatedIDs": .int(maxWaitersForUncreatedIDs),
            "maxSubscriptionsToUncreatedIDs": .int(maxSubscriptionsToUncreatedIDs),
            "maxLogBytes": .int(maxLogBytes),
            "maxTotalLogBytes": .int(maxTotalLogBytes),
            "maxRecordChildren": .int(maxRecordChildren),
            "maxBatchAnswerBytes": .int(maxBatchAnswerBytes),
        ])
    }
}
