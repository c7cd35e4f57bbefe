import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// A `promised --store DIR` whose store folder outlives the daemon: start it,
/// kill it (``kill9()``) or stop it (``terminate(grace:)``), and start it again
/// (``restart(extraArguments:fileSizeLimitBlocks:)``) on the same store.
/// ``remove()`` (in a `defer`) kills what runs and deletes the folder.
///
/// Each start writes its own log file (`promised-N.log`), so that a start
/// under a file-size limit does not inherit a log already past the limit.
final class E2EDurableDaemon {
    /// The temporary folder holding the store, the socket and the logs.
    let directory: String
    /// `--store` (created by the daemon; it does not exist before the first start).
    let storeDirectory: String
    let socketPath: String
    /// The arguments every start gets after `--socket` and `--store`.
    let extraArguments: [String]
    private var process: E2ESpawnedProcess?
    /// How many times the daemon was started.
    private(set) var starts = 0

    /// Makes the folder; does not start the daemon (see ``start(extraArguments:fileSizeLimitBlocks:timeout:)``).
    init(extraArguments: [String] = [], storeSubpath: String = "store") throws {
        var template = Array("/tmp/pdur-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw E2EHarnessError("mkdtemp failed") }
        directory = String(cString: made)
        storeDirectory = directory + "/" + storeSubpath
        socketPath = directory + "/s.sock"
        self.extraArguments = extraArguments
        guard FileManager.default.isExecutableFile(atPath: E2EBinaries.promised) else {
            throw E2EHarnessError("promised is not built at \(E2EBinaries.promised)")
        }
    }

    /// Makes the folder and starts the daemon.
    static func started(extraArguments: [String] = []) throws -> E2EDurableDaemon {
        let daemon = try E2EDurableDaemon(extraArguments: extraArguments)
        do {
            try daemon.start()
        } catch {
            daemon.remove()
            throw error
        }
        return daemon
    }

    /// The SQLite file the daemon keeps the promises in.
    var databasePath: String { storeDirectory + "/promises.sqlite3" }
    var logPath: String { directory + "/promised-\(starts).log" }
    var pid: pid_t? { process?.pid }
    var isRunning: Bool { process?.isRunning ?? false }

    /// What the current (or last) daemon wrote to stdout and stderr.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    /// The last `limit` characters of ``log``, for failure messages.
    func logTail(_ limit: Int = 3000) -> String { String(log.suffix(limit)) }

    /// Starts `promised --socket S --store DIR extraArguments…` and waits until it
    /// answers `info` (at most `timeout`). With `fileSizeLimitBlocks` it runs
    /// through `/bin/sh -c 'ulimit -f N; exec …'` (dash counts 512-byte blocks),
    /// so that writes past N blocks fail with EFBIG (the daemon ignores SIGXFSZ).
    func start(extraArguments more: [String] = [], fileSizeLimitBlocks: Int? = nil, timeout: Duration = .seconds(15)) throws {
        guard !isRunning else { throw E2EHarnessError("start: the daemon is still running (pid \(pid ?? 0))") }
        starts += 1
        let arguments = ["--socket", socketPath, "--store", storeDirectory] + extraArguments + more
        let spawned: E2ESpawnedProcess
        if let blocks = fileSizeLimitBlocks {
            // "$0" "$@" keeps every argument as it is: no quoting to get wrong.
            spawned = try E2ESpawnedProcess(
                "/bin/sh", ["-c", "ulimit -f \(blocks) && exec \"$0\" \"$@\"", E2EBinaries.promised] + arguments,
                logPath: logPath)
        } else {
            spawned = try E2ESpawnedProcess(E2EBinaries.promised, arguments, logPath: logPath)
        }
        process = spawned

        let deadline = ContinuousClock.now + timeout
        while true {
            if let probe = try? BlockingPromiseClient(socketPath: socketPath, timeout: .seconds(5)) {
                defer { probe.close() }
                if (try? probe.call("info")) != nil { return }
            }
            guard spawned.isRunning else {
                throw E2EHarnessError(
                    "promised (start \(starts)) exited with status \(spawned.terminationStatus.map(String.init) ?? "?") "
                        + "before answering info; log: \(logTail())")
            }
            guard ContinuousClock.now < deadline else {
                kill9()
                throw E2EHarnessError("promised (start \(starts)) did not answer info within \(timeout); log: \(logTail())")
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }

    /// SIGKILL, and reap it. Does nothing when it is not running.
    func kill9() {
        guard let process, process.isRunning else { return }
        kill(process.pid, SIGKILL)
        _ = waitForExit(process, within: .seconds(10))
    }

    /// SIGTERM, then waits up to `grace` for it to exit by itself.
    /// - Returns: its exit status (128 + signal when a signal ended it), or nil
    ///   when it did not exit in time (it is then killed with SIGKILL).
    @discardableResult
    func terminate(signal: Int32 = SIGTERM, grace: Duration = .seconds(5)) -> Int32? {
        guard let process else { return nil }
        guard process.isRunning else { return process.terminationStatus }
        kill(process.pid, signal)
        if waitForExit(process, within: grace) { return process.terminationStatus }
        kill(process.pid, SIGKILL)
        _ = waitForExit(process, within: .seconds(10))
        return nil
    }

    /// Waits up to `timeout` for the daemon to exit on its own (after a signal sent elsewhere).
    func waitForExit(within timeout: Duration) -> Int32? {
        guard let process else { return nil }
        return waitForExit(process, within: timeout) ? process.terminationStatus : nil
    }

    /// Kills the running daemon (SIGKILL) if any, and starts a new one on the same store.
    func restart(extraArguments more: [String] = [], fileSizeLimitBlocks: Int? = nil) throws {
        kill9()
        try start(extraArguments: more, fileSizeLimitBlocks: fileSizeLimitBlocks)
    }

    /// Kills the daemon if it runs and deletes the folder (store, logs, socket).
    func remove() {
        kill9()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A connected client with a bounded default timeout.
    func client(timeout: Duration = .seconds(10)) throws -> BlockingPromiseClient {
        try BlockingPromiseClient(socketPath: socketPath, timeout: timeout)
    }

    /// Runs the built `promisectl` against this daemon.
    func ctl(_ arguments: [String]) throws -> E2ECommandResult {
        try E2ECommand.run(E2EBinaries.promisectl, arguments, environment: ["PROMISED_SOCKET": socketPath])
    }

    /// Starts `promisectl ARGS…` against this daemon in the background.
    func startCtl(_ arguments: [String]) throws -> E2ERunningCommand {
        try E2ECommand.start(E2EBinaries.promisectl, arguments, environment: ["PROMISED_SOCKET": socketPath])
    }

    /// One call on a fresh connection.
    @discardableResult
    func call(_ method: String, _ params: [String: JSONValue] = [:]) throws -> JSONValue {
        let client = try client()
        defer { client.close() }
        return try client.call(method, params)
    }

    /// The record of `id`, or nil when the daemon answers -32001 (no such promise).
    func record(_ id: String) throws -> BlockingPromiseClient.Record? {
        do {
            return try E2E.record(call("get", ["id": .string(id)]))
        } catch let error as RPCError where error.code == .noSuchPromise {
            return nil
        }
    }

    /// False when the daemon answers -32001 (no such promise) for `id`.
    func exists(_ id: String) throws -> Bool { try record(id) != nil }

    /// Every record the daemon holds (all `list` pages), by id.
    func allRecords(client: BlockingPromiseClient) throws -> [String: BlockingPromiseClient.Record] {
        var records: [String: BlockingPromiseClient.Record] = [:]
        var cursor: JSONValue = .null
        for _ in 0..<10_000 {
            var params: [String: JSONValue] = ["limit": 10_000]
            if !cursor.isNull { params["cursor"] = cursor }
            let page = try client.call("list", params, timeout: .seconds(30))
            for element in page["promises"]?.arrayValue ?? [] {
                let record = try E2E.record(element)
                records[record.id] = record
            }
            cursor = page["cursor"] ?? .null
            if cursor.isNull { return records }
        }
        throw E2EHarnessError("list did not end after 10,000 pages")
    }

    private func waitForExit(_ process: E2ESpawnedProcess, within duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.002) }
        return !process.isRunning
    }

    /// Runs `body` with a started daemon on a fresh store, removed afterwards even when `body` throws.
    static func with<T>(extraArguments: [String] = [], _ body: (E2EDurableDaemon) throws -> T) throws -> T {
        let daemon = try E2EDurableDaemon.started(extraArguments: extraArguments)
        defer { daemon.remove() }
        return try body(daemon)
    }

    /// Where ``startLongCommand(_:)``'s command leaves its traces.
    struct LongCommand {
        /// One line "ran" per run of the command.
        let runs: String
        /// The pid of its process (and process group), once it runs.
        let pidFile: String
    }

    /// Creates "p" and a `then … exec` child "c" whose command notes its
    /// run and its pid, then sleeps 30 s; resolves "p" so that it starts.
    /// Kill its group with `E2E.killGroup(fromPIDFile:)` when done.
    func startLongCommand(_ client: BlockingPromiseClient) throws -> LongCommand {
        let command = LongCommand(runs: directory + "/runs", pidFile: directory + "/exec.pid")
        try client.call("create", ["id": "p"])
        try client.call("then", [
            "id": "p", "childId": "c",
            "exec": ["sh", "-c", "echo ran >> \"$1\"; echo $$ > \"$2\"; exec sleep 30", "sh",
                     .string(command.runs), .string(command.pidFile)],
        ])
        try client.call("resolve", ["id": "p", "value": 1])
        return command
    }
}

extension E2E {
    /// Milliseconds since 1970, as the daemon writes `created` and `settled`.
    static func nowMilliseconds() -> Int { Int((Date().timeIntervalSince1970 * 1000).rounded()) }

    /// Kills a process group (an exec command left running by a killed daemon).
    static func killGroup(fromPIDFile path: String) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1
        else { return }
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
    }

    /// The lines of a text file (none when it does not exist).
    static func lines(ofFile path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}
