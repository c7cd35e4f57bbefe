import ArgumentParser
import Logging
import PromiseModel
import PromiseRPC
import PromiseRegistry
import PromiseServer

/// The promise daemon: holds named promises for every process of this user,
/// served as JSON-RPC 2.0 over a Unix socket.
@main
struct Promised: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "promised",
        abstract: "Keep promises that any process of this user can create, settle and wait for.",
        discussion: """
            Serves JSON-RPC 2.0, one message per line, on a Unix socket (mode 0600, \
            in a folder of mode 0700). Ready once the socket accepts connections; \
            SIGTERM or SIGINT stops it cleanly (exit status 0). Logs go to stderr. \
            Under systemd (Type=notify, $NOTIFY_SOCKET) it sends READY=1 once it serves.

            The socket is --socket, else $PROMISED_SOCKET, else \
            $XDG_RUNTIME_DIR/promised.sock, else /tmp/promised-<uid>/promised.sock.

            Promises are durable by default: every change is in the store (SQLite, \
            in --store, else $XDG_STATE_HOME/promised, else ~/.local/state/promised) \
            before it is acknowledged, and a restarted daemon carries on where it \
            stopped. Settled promises are kept for --retain. See docs/DURABILITY.md. \
            The store folder must be this user's, writable by no one else and not a \
            symbolic link (it is created 0700); one daemon at a time uses a store.

            At start the open-file soft limit is raised to the hard limit, and \
            --max-connections defaults to what fits in it. Past that limit, \
            --reserved-connections more clients may still create, settle and read \
            (not wait or subscribe), so that a full daemon can release its waiters.

            Commands run by `then … exec` take a slot of a pool while they run: the \
            default pool has --max-running-processes slots, --pool NAME=N makes more \
            pools. promisectl pool NAME N changes a limit, kept across restarts \
            unless the daemon is started with another limit for that pool. A \
            step with no free slot waits its turn (first come first served); at most \
            --max-queued wait over all pools.

            A step's command runs under a small monitor process that outlives the \
            daemon: it keeps the command's output and exit status in the store folder \
            (steps/). A clean stop leaves running steps running (--stop-steps stops \
            them), and so does kill -9; the next daemon on the same store re-attaches \
            to them and settles them as they end, or at once from what their monitor \
            wrote. A step whose monitor is gone too (a reboot) is rejected, never run twice.

            Examples:
              promised
              promised --in-memory --retain 10m
              promised --socket /tmp/p.sock --log-level debug
              promised --pool cc=2 --pool link=1
              echo '{"jsonrpc":"2.0","id":1,"method":"info"}' | socat - UNIX-CONNECT:/tmp/p.sock
            """,
        version: PromiseProtocol.daemonVersion)

    @Option(help: ArgumentHelp("The Unix socket to listen on.", valueName: "path"))
    var socket: String?

    @Option(help: ArgumentHelp(
        "The folder to keep promises in across restarts (default: $XDG_STATE_HOME/promised or ~/.local/state/promised).",
        valueName: "path"))
    var store: String?

    @Flag(help: "Keep promises in memory only; nothing survives a restart.")
    var inMemory = false

    @Option(help: ArgumentHelp(
        "How long settled promises are kept before they are dropped: a number with ms, s, m, h or d.",
        valueName: "duration"))
    var retain = RetentionPeriod(milliseconds: 24 * 3_600_000)

    @Option(help: ArgumentHelp(
        "After a restart, how long a leased pending promise waits for its client to take the lease back (the lease method) before it is rejected: a number with ms, s, m, h or d; 0 rejects at once.",
        valueName: "duration"))
    var leaseGrace = RetentionPeriod(milliseconds: 10_000)

    @Option(help: "How much to log to stderr.")
    var logLevel: LogLevel = .info

    @Option(help: ArgumentHelp(
        "Longest request line, in bytes; a longer one closes the connection (default \(DaemonLimits().maxLineBytes)).",
        valueName: "bytes"))
    var maxLineBytes: Int?

    @Option(help: ArgumentHelp(
        "Clients served at once; more get an error and are closed (default: what the open-file limit allows, at most 65536).",
        valueName: "n"))
    var maxConnections: Int?

    @Option(help: ArgumentHelp(
        "Bytes queued for a client that does not read before it is cut off (default \(DaemonLimits().maxOutputBufferBytes)).",
        valueName: "bytes"))
    var maxOutputBufferBytes: Int?

    @Option(help: ArgumentHelp(
        "Bytes buffered for all clients together (unfinished lines, unread answers); past it the clients holding the most are closed with an error (default: a sixteenth of physical memory, 64 MiB to 2 GiB; \(DaemonLimits().maxBufferedBytes) here).",
        valueName: "bytes"))
    var maxBufferedBytes: Int?

    @Option(help: ArgumentHelp(
        "Seconds a client may take to finish a request line it started; then it gets an error and is closed (default \(DaemonLimits().lineTimeoutSeconds)).",
        valueName: "seconds"))
    var lineTimeout: Int?

    @Option(help: ArgumentHelp("Promises held at once (default \(DaemonLimits().maxPromises)).", valueName: "n"))
    var maxPromises: Int?

    @Option(help: ArgumentHelp(
        "Bytes of stdout a `then … exec` or `promisectl run` step may write; more rejects the step (default 1048576).",
        valueName: "bytes"))
    var maxProcessOutputBytes: Int?

    @Option(help: ArgumentHelp(
        "Processes started by `then … exec` running at once: the default pool's limit; more wait their turn (default 256).",
        valueName: "n"))
    var maxRunningProcesses: Int?

    @Option(name: .customLong("pool"), help: ArgumentHelp(
        "A pool of slots and its limit, 0 to 65536 (repeatable): steps and `promisectl run --pool` naming it wait for a slot.",
        valueName: "name=n"))
    var pools: [PoolLimit] = []

    @Option(help: ArgumentHelp(
        "Steps and pool.acquire requests waiting for a slot, over all pools; more get -32004 (default 100000).",
        valueName: "n"))
    var maxQueued: Int?

    @Option(help: ArgumentHelp(
        "Milliseconds a cancelled process has between SIGTERM and SIGKILL (default \(DaemonLimits().killGraceMilliseconds)).",
        valueName: "ms"))
    var killGraceMs: UInt64?

    @Flag(help: """
        At a clean stop (SIGTERM, SIGINT), stop the commands of running `then … exec` steps and reject \
        those steps, saying they are not run again. Default: leave them running; the next daemon on the \
        same store re-attaches to them and settles them from their exit status and output.
        """)
    var stopSteps = false

    @Option(help: ArgumentHelp(
        "Bytes of JSON a value made by all or allSettled (or given to an exec command) may take; a longer one is rejected (default \(DaemonLimits().maxValueBytes)).",
        valueName: "bytes"))
    var maxValueBytes: Int?

    @Option(help: ArgumentHelp(
        "Bytes of JSON a reason made by any or all-errors may take; a longer one keeps its innermost causes (default \(DaemonLimits().maxReasonBytes)).",
        valueName: "bytes"))
    var maxReasonBytes: Int?

    // Limits that keep a full daemon usable.
    @Option(help: ArgumentHelp(
        "Clients let in past --max-connections to settle promises only: wait and subscribe are refused on them (default 64).",
        valueName: "n"))
    var reservedConnections: Int?

    @Option(help: ArgumentHelp("Pending waits, over all clients, for ids not created yet (default 100000).",
                               valueName: "n"))
    var maxWaitersForUncreatedIds: Int?

    @Option(help: ArgumentHelp("Subscriptions, over all clients, to ids not created yet (default 100000).",
                               valueName: "n"))
    var maxSubscriptionsToUncreatedIds: Int?

    @Option(help: ArgumentHelp(
        "Child ids a record lists under children; list with parent pages through the rest (default 1000).",
        valueName: "n"))
    var maxRecordChildren: Int?

    @Option(help: ArgumentHelp(
        "Bytes of JSON one batch's answer may take; members past it get an error, their requests done (default 67108864).",
        valueName: "bytes"))
    var maxBatchAnswerBytes: Int?

    @Option(help: ArgumentHelp(
        "Bytes kept of the end of each step's stdout and of its stderr, for `logs` (default 65536; 0 keeps none).",
        valueName: "bytes"))
    var maxLogBytes: Int?

    @Option(help: ArgumentHelp(
        "Bytes all steps' logs hold in memory together; past it settled steps' logs are cut first (default 268435456).",
        valueName: "bytes"))
    var maxTotalLogBytes: Int?

    func validate() throws {
        if inMemory && store != nil {
            throw ValidationError("--store and --in-memory cannot be used together.")
        }
        for (name, value) in [("--max-line-bytes", maxLineBytes), ("--max-connections", maxConnections),
                              ("--max-output-buffer-bytes", maxOutputBufferBytes), ("--max-promises", maxPromises),
                              ("--max-buffered-bytes", maxBufferedBytes), ("--line-timeout", lineTimeout),
                              ("--max-running-processes", maxRunningProcesses), ("--max-queued", maxQueued),
                              ("--max-process-output-bytes", maxProcessOutputBytes),
                              ("--max-value-bytes", maxValueBytes), ("--max-reason-bytes", maxReasonBytes),
                              ("--max-waiters-for-uncreated-ids", maxWaitersForUncreatedIds),
                              ("--max-subscriptions-to-uncreated-ids", maxSubscriptionsToUncreatedIds),
                              ("--max-record-children", maxRecordChildren),
                              ("--max-batch-answer-bytes", maxBatchAnswerBytes),
                              ("--max-total-log-bytes", maxTotalLogBytes)] {
            if let value, value <= 0 {
                throw ValidationError("\(name) must be positive.")
            }
        }
        if let maxLogBytes, !(0...DaemonLimits.maxLogBytesCeiling).contains(maxLogBytes) {
            throw ValidationError("--max-log-bytes must be from 0 to \(DaemonLimits.maxLogBytesCeiling).")
        }
        let outputBuffer = maxOutputBufferBytes ?? DaemonLimits().maxOutputBufferBytes
        if let maxLogBytes, maxLogBytes > DaemonLimits.maxLogBytes(fitting: outputBuffer) {
            // A `logs` answer that passed it would cut its client off.
            throw ValidationError("--max-log-bytes is too large for --max-output-buffer-bytes \(outputBuffer): "
                + "a logs answer can take 12 times it (every byte escaped); at most "
                + "\(DaemonLimits.maxLogBytes(fitting: outputBuffer)), or raise --max-output-buffer-bytes.")
        }
        if maxRunningProcesses != nil && pools.contains(where: { $0.name == DaemonLimits.defaultPoolName }) {
            throw ValidationError("--pool default=N and --max-running-processes set the same limit: give one.")
        }
        if let reservedConnections, reservedConnections < 0 {
            throw ValidationError("--reserved-connections must be 0 or more.")
        }
    }

    /// A step's monitor when started as one (`--step-monitor`, see
    /// StepMonitor), else the daemon.
    static func main() {
        StepMonitor.takeOverIfAsked()
        main(nil)
    }

    func run() throws {
        // Before any thread starts, so that every thread inherits the mask
        // and only the signal thread takes them; unsetenv is not thread-safe.
        StopSignals.block()
        let notification = ServiceNotification.takeFromEnvironment()
        let level = logLevel.level
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "promised")
        try serve(limits: limits(openFiles: raiseOpenFileLimit(logger)), logger: logger, notification: notification)
    }
}
