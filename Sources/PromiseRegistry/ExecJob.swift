import Promise
import PromiseJSON
import PromiseModel
#if canImport(Glibc)
import Glibc
#endif

/// The command of a `then … exec` child: what to run, and the process while
/// it runs. Loop thread only.
///
/// The job exists before its child's record does (with `.inline` and a
/// settled parent, the core runs the handler inside `then`), so the handler
/// and the child's `onCancel` meet here rather than on the record.
final class ExecJob {
    let spec: ProcessSpec
    /// The running process; nil before it starts and once it has exited.
    var process: (any RunningProcess)?
    /// Set when the child was cancelled: a handler that runs afterwards
    /// must not start the command.
    var cancelled = false
    /// Set when the command is about to start; stored before it does, so
    /// that a restarted daemon never runs it a second time.
    var started = false
    /// The process group and start time of the running command, stored so
    /// that a restart after a crash can stop it (``LeftoverProcessGroup``).
    var recordedProcess: LeftoverProcessGroup?
    /// What the command's outcome settles, and the child follows, once started.
    var outcome: Promise<JSONValue>?
    /// The child it settles, once `then` has made it: a child settled by
    /// other means (a client's `resolve`) does not start the command.
    weak var child: Promise<JSONValue>?
    /// The stdin line of its command, shared with its parent's other
    /// commands, held from the start until the command has exited.
    var sharedInput: SharedExecInput?
    /// The pool whose slot its command takes (Registry+Pools.swift).
    var pool = ExecPools.defaultName
    /// Its place in that pool's queue while it waits for a slot.
    var turn: PoolTurn?
    /// The slot its command holds from start until it has exited.
    var slot: PoolSlot?
    /// When the command was launched, in milliseconds since 1970 (the record's
    /// `started`); stored, so that a restarted daemon shows it too.
    var launched: Int64?
    /// How the command exited (the record's `exitStatus`): 128 + N when killed by signal N.
    var exitStatus: Int32?
    /// Where its monitor keeps the output and writes the outcome, when it
    /// outlives the daemon (``StepOutputFiles``).
    var outputFiles: StepOutputFiles?
    /// The step's promise when a restarted daemon re-attached to its
    /// running monitor (Registry+RunningSteps.swift): settled from the outcome the monitor writes.
    var reattached: Promise<JSONValue>?
    /// How many more times a failed command is run (`then`'s `retry`): on a
    /// non-zero exit or a signal, and when its monitor was lost at a restart.
    var retries = 0
    /// How long after a failure it runs again (`retryDelayMs`).
    var retryDelayMilliseconds: UInt64 = 0
    /// How many times its command was started (the record's `attempts`).
    var attempts = 0
    /// Ends the wait before the next attempt at once (a cancel), while it waits.
    var abandonRetry: (() -> Void)?

    init(spec: ProcessSpec) {
        self.spec = spec
    }

    /// Waiting in its pool's queue.
    var isQueued: Bool { turn?.isQueued ?? false }
}

@available(*, unavailable)
extension ExecJob: Sendable {}

/// A parent's value (or reason) as the line its commands read on stdin,
/// written once for all of them. Loop thread only.
///
/// A parent's commands start in the turn it settles, and each serialized its
/// value again there (256 commands of a 16 MiB value: 4 GiB written in one
/// turn); now they share one line (`ProcessSpec.stdin`). The jobs whose
/// command is starting or running hold this; the parent holds it weakly, so
/// the line lasts no longer than they do and a settled value is not kept twice.
final class SharedExecInput {
    /// How the parent settled: `fulfilled` (the line is its value) or `rejected` (its reason).
    let state: String
    let line: [UInt8]

    init(state: String, line: [UInt8]) {
        self.state = state
        self.line = line
    }
}

@available(*, unavailable)
extension SharedExecInput: Sendable {}

extension ProcessOutcome {
    /// How a finished command settles its child: stdout longer than
    /// `outputLimit` (``stdoutTruncated``) rejects it with
    /// ``RemoteRejection/stdoutTooLarge(limit:)`` however the command ended
    /// (it is killed at the limit, so its status says nothing of its own);
    /// else exit 0 fulfils with stdout (as JSON if it parses, else as text
    /// without its final newline), and anything else rejects with the exit
    /// status as `code` and the end of stderr as `message`. JSON nested
    /// deeper than `maxDepth` is kept as text, as a client's params would be refused.
    func settlement(maxDepth: Int, outputLimit: Int) -> Result<JSONValue, RemoteRejection> {
        // A cut-off stdout may still parse ("12345" cut to "123"), and a value
        // cut short is a wrong value: the step fails, saying why.
        if stdoutTruncated { return .failure(.stdoutTooLarge(limit: outputLimit)) }
        if exitStatus == 0 && signal == nil {
            if let value = try? JSONValue(parsing: stdout), value.depth <= maxDepth {
                return .success(value)
            }
            return .success(.string(Self.text(stdout, trimmingFinalNewline: true)))
        }
        var message = Self.text(stderr, trimmingFinalNewline: true)
        if message.count > Self.maxMessageCharacters {
            message = "…" + message.suffix(Self.maxMessageCharacters)
        }
        if message.isEmpty {
            message = signal.map { "killed by signal \($0)" } ?? "exited with status \(exitStatus)"
        }
        var data: [String: JSONValue] = ["exitStatus": .int(Int(exitStatus))]
        if let signal { data["signal"] = .int(Int(signal)) }
        return .failure(RemoteRejection(code: Int(exitStatus), message: message, data: .object(data)))
    }

    /// The end of stderr kept as the message; the whole kept tail is too long for one.
    static let maxMessageCharacters = 4_096

    private static func text(_ bytes: [UInt8], trimmingFinalNewline: Bool) -> String {
        var slice = bytes[...]
        if trimmingFinalNewline, slice.last == UInt8(ascii: "\n") {
            slice = slice.dropLast()
            if slice.last == UInt8(ascii: "\r") { slice = slice.dropLast() }
        }
        return String(decoding: slice, as: UTF8.self)
    }
}

extension ProcessSpec {
    /// What makes this command unsafe to start, as the -32602 error naming
    /// the param at fault, or nil: a NUL in an argument, in `cwd`, or in an
    /// environment variable's name or value; a variable name that is empty
    /// or holds `=`.
    ///
    /// The C strings `execve` and `chdir` take end at the first NUL, so
    /// `"echo A\u0000; echo B"` ran `echo A`: what runs must be what the
    /// record shows, or nothing. And `name=value` is how a variable is
    /// written, so a name `PATH=/evil:` set `PATH` instead of itself.
    ///
    /// ```swift
    /// ProcessSpec(argv: ["sh", "-c", "echo A\u{0}; echo B"]).problem?.param   // "exec"
    /// ProcessSpec(argv: ["env"], env: ["PATH=/evil:": "x"]).problem?.param  // "env"
    /// ```
    var problem: (param: String, reason: String)? {
        if let argument = argv.first(where: { Self.holds(0, $0) }) {
            return (param: "exec", reason: "\"exec\" must not hold a NUL character (in \(Self.shown(argument)))")
        }
        if let cwd, Self.holds(0, cwd) {
            return (param: "cwd", reason: "\"cwd\" must not hold a NUL character")
        }
        // Every `then … exec` step sends its shell's whole environment: find
        // the faulty variables first, then name the first of them by name
        // (the same one every time), without sorting all of them.
        func isFaultyName(_ name: String) -> Bool {
            name.isEmpty || Self.holds(UInt8(ascii: "="), name) || Self.holds(0, name)
        }
        let faulty = env.lazy.filter { name, value in isFaultyName(name) || Self.holds(0, value) }
        if let (name, _) = faulty.min(by: { $0.key < $1.key }) {
            if isFaultyName(name) {
                return (
                    param: "env", reason: "\"env\" names must be non-empty, without \"=\" or NUL (not \(Self.shown(name)))")
            }
            return (param: "env", reason: "\"env\" values must not hold a NUL character (in \(Self.shown(name)))")
        }
        return nil
    }

    /// Whether `text` holds the byte `byte`: `memchr` over the string's
    /// contiguous UTF-8 when it has it (a native string does), not walking
    /// `utf8` as a collection or looping over its bytes
    /// (docs/PERFORMANCE.md).
    private static func holds(_ byte: UInt8, _ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            guard let start = bytes.baseAddress else { return false }
            return memchr(start, Int32(byte), bytes.count) != nil
        }
            ?? text.utf8.contains(byte)
    }

    /// `text` quoted as JSON, cut short: an error message names what it refuses without repeating all of it.
    private static func shown(_ text: String) -> String {
        JSONValue.string(RemoteRejection.cut(text, toBytes: 64)).description
    }
}
