import Foundation
import Glibc

/// A server started by the benchmark (promised or redis-server), stopped by
/// it, with its output kept in a log file for when something goes wrong.
final class ServerProcess {
    let name: String
    let socketPath: String
    let logPath: String
    private let process = Process()

    /// Starts `executable` and returns once `socketPath` accepts connections.
    init(name: String, executable: String, arguments: [String], socketPath: String, logPath: String) throws {
        self.name = name
        self.socketPath = socketPath
        self.logPath = logPath
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(15)
        while true {
            if let fd = try? connectUnix(socketPath) {
                close(fd)
                return
            }
            guard process.isRunning, ContinuousClock.now < deadline else {
                stop()
                let output = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                throw SocketError(message: "\(name) did not start listening on \(socketPath):\n\(output)")
            }
            usleep(20_000)
        }
    }

    var pid: Int32 { process.processIdentifier }

    /// Resident set size, from /proc/<pid>/status (VmRSS), in bytes.
    func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kilobytes = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
            return kilobytes * 1024
        }
        return 0
    }

    /// CPU time used so far, in user mode and in the kernel, in seconds
    /// (/proc/<pid>/stat, fields 14 and 15, in clock ticks): every thread's.
    func cpuSeconds() -> (user: Double, kernel: Double) {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let nameEnd = stat.lastIndex(of: ")")
        else { return (0, 0) }
        // After the name (which may hold spaces): field 3 (state) onwards.
        let fields = stat[stat.index(after: nameEnd)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let kernel = Double(fields[12]) else { return (0, 0) }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (user / ticks, kernel / ticks)
    }

    /// SIGTERM, then SIGKILL if it has not exited within five seconds.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}

/// The full path of `command`, looked up in $PATH unless it has a slash.
func executablePath(_ command: String) -> String? {
    if command.contains("/") { return access(command, X_OK) == 0 ? command : nil }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") {
        let candidate = "\(directory)/\(command)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// Raises the soft limit on open files to the hard limit (for root, both to
/// at least 65,536); returns the soft limit.
func raiseOpenFileLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
    // Fan-out holds 20,000 sockets here; only root may raise the hard limit.
    var raised = limit
    raised.rlim_max = max(limit.rlim_max, 65536)
    raised.rlim_cur = raised.rlim_max
    if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return Int(clamping: raised.rlim_cur) }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    return Int(clamping: limit.rlim_cur)
}
