import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// Where the built `promised` and `promisectl` are: next to the running test
/// executable (SwiftPM puts test bundles and executables in one folder).
/// `/proc/self/exe` is used because `Bundle.main` names the xctest runner's folder
/// only when the tests run under XCTest's runner, not under `swift test`'s Testing entry.
enum E2EBinaries {
    static let folder: URL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    static var promised: String { folder.appendingPathComponent("promised").path }
    static var promisectl: String { folder.appendingPathComponent("promisectl").path }
    /// The package's root, for examples/.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}

/// Errors of the harness itself (not of the code under test).
struct E2EHarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One `promised --in-memory` on a private socket in a fresh temporary folder.
/// Stop it with ``stop()`` (in a `defer`), which also removes the folder.
final class E2EDaemon {
    let directory: String
    let socketPath: String
    let logPath: String
    private let process: E2ESpawnedProcess

    /// Starts the daemon and waits (at most 10 s) until it answers `info`.
    /// With `cleanSignals` false it inherits the test thread's blocked signals.
    init(extraArguments: [String] = [], cleanSignals: Bool = true) throws {
        var template = Array("/tmp/pe2e-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw E2EHarnessError("mkdtemp failed") }
        directory = String(cString: made)
        socketPath = directory + "/s.sock"
        logPath = directory + "/promised.log"

        guard FileManager.default.isExecutableFile(atPath: E2EBinaries.promised) else {
            throw E2EHarnessError("promised is not built at \(E2EBinaries.promised)")
        }
        process = try E2ESpawnedProcess(
            E2EBinaries.promised, ["--in-memory", "--socket", socketPath] + extraArguments,
            logPath: logPath, cleanSignals: cleanSignals)

        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            if let probe = try? BlockingPromiseClient(socketPath: socketPath, timeout: .seconds(5)) {
                defer { probe.close() }
                if (try? probe.call("info")) != nil { break }
            }
            guard process.isRunning, ContinuousClock.now < deadline else {
                stop()
                throw E2EHarnessError("promised did not start listening on \(socketPath); log: \(log)")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    var pid: pid_t { process.pid }
    var isRunning: Bool { process.isRunning }
    /// What the daemon wrote to stdout and stderr (kept after ``stop()``).
    var log: String { finalLog ?? (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    private var finalLog: String?

    /// A connected client with a bounded default timeout.
    func client(timeout: Duration = .seconds(10)) throws -> BlockingPromiseClient {
        try BlockingPromiseClient(socketPath: socketPath, timeout: timeout)
    }

    /// Sends SIGTERM and waits up to `grace` for a clean exit, then SIGKILL.
    /// Returns the exit status when it exited by itself.
    @discardableResult
    func stop(grace: Duration = .seconds(3)) -> Int32? {
        defer {
            finalLog = log
            try? FileManager.default.removeItem(atPath: directory)
        }
        guard process.isRunning else { return process.terminationStatus }
        kill(process.pid, SIGTERM)
        if waitForExit(within: grace) { return process.terminationStatus }
        kill(process.pid, SIGKILL)
        _ = waitForExit(within: .seconds(3))
        return nil
    }

    private func waitForExit(within duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        return !process.isRunning
    }

    /// Runs `body` with a fresh daemon that is stopped afterwards, even when `body` throws.
    static func with<T>(extraArguments: [String] = [], _ body: (E2EDaemon) throws -> T) throws -> T {
        let daemon = try E2EDaemon(extraArguments: extraArguments)
        defer { daemon.stop() }
        return try body(daemon)
    }
}

/// What a finished command did.
struct E2ECommandResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String
    var description: String { "status \(status), stdout \(stdout.debugDescription), stderr \(stderr.debugDescription)" }
}

/// Runs processes with files for their output (no pipe to drain, no deadlock)
/// and a bound on how long they may take.
enum E2ECommand {
    /// Runs `executable` to its end (killing it after `timeout`).
    static func run(
        _ executable: String, _ arguments: [String], stdin: String? = nil,
        environment: [String: String] = [:], timeout: Duration = .seconds(20)
    ) throws -> E2ECommandResult {
        let started = try start(executable, arguments, stdin: stdin, environment: environment)
        return try started.finish(timeout: timeout)
    }

    /// Starts `executable` and returns at once.
    static func start(
        _ executable: String, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]
    ) throws -> E2ERunningCommand {
        try E2ERunningCommand(executable, arguments, stdin: stdin, environment: environment)
    }
}

/// A command started by ``E2ECommand/start(_:_:stdin:environment:)``.
final class E2ERunningCommand {
    let process = Process()
    private let directory: String

    init(_ executable: String, _ arguments: [String], stdin: String?, environment: [String: String]) throws {
        var template = Array("/tmp/pcmd-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw E2EHarnessError("mkdtemp failed") }
        directory = String(cString: made)
        for name in ["in", "out", "err"] { _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: nil) }
        if let stdin { try stdin.write(toFile: directory + "/in", atomically: false, encoding: .utf8) }

        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardInput = FileHandle(forReadingAtPath: directory + "/in")
        process.standardOutput = FileHandle(forWritingAtPath: directory + "/out")
        process.standardError = FileHandle(forWritingAtPath: directory + "/err")
        try process.run()
    }

    // A command a test started and never finished (it was killed, or left
    // to the daemon's stop) would leave its folder in /tmp for good.
    deinit { try? FileManager.default.removeItem(atPath: directory) }

    var pid: pid_t { process.processIdentifier }
    var stdoutSoFar: String { (try? String(contentsOfFile: directory + "/out", encoding: .utf8)) ?? "" }
    var stderrSoFar: String { (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? "" }

    /// Waits up to `timeout` for the end (then kills it and throws) and returns what it did.
    func finish(timeout: Duration = .seconds(20)) throws -> E2ECommandResult {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.005) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw E2EHarnessError("\(process.executableURL!.lastPathComponent) \(process.arguments ?? []) did not finish within \(timeout)")
        }
        process.waitUntilExit()
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return E2ECommandResult(
            status: status,
            stdout: (try? String(contentsOfFile: directory + "/out", encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? "")
    }
}

extension E2EDaemon {
    /// Runs the built `promisectl` against this daemon.
    func ctl(_ arguments: String..., stdin: String? = nil, timeout: Duration = .seconds(20)) throws -> E2ECommandResult {
        try ctl(arguments, stdin: stdin, timeout: timeout)
    }

    func ctl(_ arguments: [String], stdin: String? = nil, timeout: Duration = .seconds(20)) throws -> E2ECommandResult {
        try E2ECommand.run(
            E2EBinaries.promisectl, arguments, stdin: stdin,
            environment: ["PROMISED_SOCKET": socketPath], timeout: timeout)
    }

    /// Starts `promisectl` in the background.
    func startCtl(_ arguments: String...) throws -> E2ERunningCommand {
        try startCtl(arguments)
    }

    /// Starts `promisectl` in the background, with more environment variables.
    func startCtl(_ arguments: [String], environment: [String: String] = [:]) throws -> E2ERunningCommand {
        try E2ECommand.start(E2EBinaries.promisectl, arguments,
                             environment: environment.merging(["PROMISED_SOCKET": socketPath]) { _, socket in socket })
    }
}

/// Helpers the tests share.
enum E2E {
    /// An id no other test uses.
    static func uniqueID(_ prefix: String = "t") -> String { "\(prefix)/\(UUID().uuidString.prefix(12))" }

    /// Polls `condition` every 10 ms until it holds or `timeout` passes.
    static func eventually(timeout: Duration = .seconds(15), _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return try condition()
    }

    /// True while `pid` is a live process (a zombie counts as gone).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(close, offsetBy: 2)]
        return state != "Z" && state != "X"
    }

    /// The parent of `pid` (the fourth field of /proc/PID/stat), nil once it is gone.
    static func parentPID(of pid: pid_t) -> pid_t? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? pid_t(fields[1]) : nil
    }

    /// Reads a pid a command wrote to `path`, waiting for it to appear.
    static func pid(fromFile path: String, timeout: Duration = .seconds(10)) -> pid_t? {
        var pid: pid_t?
        _ = eventually(timeout: timeout) {
            let text = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            pid = text.flatMap { pid_t($0) }
            return pid != nil
        }
        return pid
    }

    static func record(_ json: JSONValue) throws -> BlockingPromiseClient.Record { try BlockingPromiseClient.Record(json) }
}
