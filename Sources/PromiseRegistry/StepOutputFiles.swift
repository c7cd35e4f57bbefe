#if canImport(Glibc)
import Glibc
#endif

/// The files a step's monitor (StepMonitor.swift) keeps in the store's step
/// folder, named after the step's sequence: `N.out` (the first `limit`
/// bytes of stdout), `N.err` (the end of stderr) and, once the command has
/// ended, `N.result` (``StepResultLine``). They outlive the daemon: a
/// daemon restarted while the command ran, or after it ended, settles the
/// step from them as the daemon that started it would have
/// (docs/DURABILITY.md, "Steps running at a restart"). They are removed
/// once the step's settlement is stored.
///
/// ```swift
/// let files = StepOutputFiles(folder: "/home/u/.local/state/promised/steps", sequence: 42)
/// files.prefix                     // ".../steps/42", the monitor's --files
/// files.written(limit: 1 << 20)    // the outcome, once N.result exists
/// ```
struct StepOutputFiles: Sendable, Hashable {
    /// The path every file's name begins with.
    let prefix: String

    init(folder: String, sequence: Int) {
        prefix = folder + "/" + String(sequence)
    }

    /// What the monitor may leave: its files and their temporaries.
    static let suffixes = [".out", ".err", ".result", ".result.tmp", ".err.tmp"]

    /// The sequence a file of the folder belongs to, or nil for a name a
    /// monitor does not write.
    static func sequence(ofFileNamed name: String) -> Int? {
        guard let suffix = suffixes.first(where: { name.hasSuffix($0) }) else { return nil }
        let digits = name.dropLast(suffix.count)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let sequence = Int(digits), sequence >= 0 else { return nil }
        return String(sequence) == digits ? sequence : nil
    }

    /// The command's outcome and the stderr bytes it wrote in all, as the
    /// monitor wrote them; nil when it wrote no outcome (it is still
    /// running, it was killed, or the machine went down before it wrote)
    /// or its files do not agree with it (cut short by a crash).
    func written(limit: Int) -> (outcome: ProcessOutcome, stderrTotal: Int)? {
        guard let resultText = Self.read(prefix + ".result", atMost: 4_096),
              let result = StepResultLine(parsing: String(decoding: resultText, as: UTF8.self)),
              let stdout = Self.read(prefix + ".out", atMost: max(limit, result.stdoutBytes) + 1),
              stdout.count == result.stdoutBytes,
              let stderr = Self.read(prefix + ".err", atMost: Int.max, keepingLast: limit)
        else { return nil }
        let outcome = ProcessOutcome(
            exitStatus: result.exitStatus, signal: result.signal, stdout: stdout, stderr: stderr,
            stdoutTruncated: result.stdoutTruncated)
        return (outcome, max(result.stderrTotal, stderr.count))
    }

    /// Removes every file of the step there is.
    func remove() {
        for suffix in Self.suffixes { unlink(prefix + suffix) }
    }

    /// The bytes of a plain file (not followed if a link), at most
    /// `atMost` of them from its start, or its last `keepingLast`; nil when
    /// it cannot be read or is longer than `atMost`.
    private static func read(_ path: String, atMost: Int, keepingLast: Int? = nil) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        let size = Int(status.st_size)
        guard size <= atMost else { return nil }
        let start = keepingLast.map { max(0, size - $0) } ?? 0
        var bytes = [UInt8](repeating: 0, count: size - start)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer in
                pread(fd, buffer.baseAddress! + filled, buffer.count - filled, off_t(start + filled))
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            filled += count
        }
        return bytes
    }
}

/// The one line of a step's `N.result`, as the monitor writes it
/// (monitor_relay.c): `promised-step-result 1 status=S signal=G stdout=B
/// truncated=T stderr=E`: the exit status (128 + G when killed by signal G,
/// 0 when it exited), the bytes of stdout kept in `N.out`, whether stdout
/// passed the limit, and the bytes of stderr written in all.
///
/// ```swift
/// StepResultLine(parsing: "promised-step-result 1 status=0 signal=0 stdout=5 truncated=0 stderr=0\n")?.exitStatus  // 0
/// ```
struct StepResultLine: Sendable, Hashable {
    var exitStatus: Int32
    var signal: Int32?
    var stdoutBytes: Int
    var stdoutTruncated: Bool
    var stderrTotal: Int
}

extension StepResultLine {
    /// Reads the line; nil for anything else (another version, a line
    /// cut short, a value out of range).
    init?(parsing text: String) {
        guard text.hasSuffix("\n") else { return nil }
        let words = text.dropLast().split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 7, words[0] == "promised-step-result", words[1] == "1" else { return nil }
        var values: [Substring: Int] = [:]
        for word in words.dropFirst(2) {
            let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, values[parts[0]] == nil, let value = Int(parts[1]), value >= 0 else { return nil }
            values[parts[0]] = value
        }
        guard let status = values["status"].flatMap(Int32.init(exactly:)), status <= 255 + 128,
              let signal = values["signal"].flatMap(Int32.init(exactly:)), signal < 128,
              let stdout = values["stdout"], let truncated = values["truncated"], truncated <= 1,
              let stderr = values["stderr"]
        else { return nil }
        exitStatus = status
        self.signal = signal == 0 ? nil : signal
        stdoutBytes = stdout
        stdoutTruncated = truncated == 1
        stderrTotal = stderr
    }
}
