import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// `logs --prefix P` and `wait --show-output`: the output of many steps at
/// once, each line led by its step's id, as `make -j` interleaves its jobs'
/// output, so that a warning of a step that succeeded is seen.
///
/// ```
/// build/cc/lapi: lapi.c:12:5: warning: unused variable 'n'
/// build/cc/lcode: lcode.c:88:1: warning: no return statement
/// ```
enum PrefixedLogs {
    /// Steps whose logs one batch asks for.
    static let batchSize = 100

    /// Prints the kept output of every step whose id starts with `prefix`,
    /// in creation order: stdout lines on stdout, stderr lines on stderr.
    static func printAll(under prefix: String, with client: BlockingPromiseClient) throws {
        var cursor: JSONValue = .null
        repeat {
            var params: [String: JSONValue] = ["prefix": .string(prefix), "limit": .int(batchSize)]
            if !cursor.isNull { params["cursor"] = cursor }
            let page = try client.call("list", params)
            let ids = (page["promises"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            try print(ids, streams: [.stdout, .stderr], with: client)
            cursor = page["cursor"] ?? .null
        } while !cursor.isNull
    }

    /// Prints `streams` of the logs of `ids` (in batches), each line led by its id.
    /// An id without a promise (forgotten meanwhile) is passed over.
    static func print(_ ids: [String], streams: [StepStream], with client: BlockingPromiseClient) throws {
        for start in stride(from: 0, to: ids.count, by: batchSize) {
            let chunk = Array(ids[start..<min(start + batchSize, ids.count)])
            let answers = try client.batch(chunk.map { .init("logs", ["id": .string($0)]) }, timeout: nil)
            for (id, answer) in zip(chunk, answers) {
                guard case .success(let log) = answer else { continue }
                for stream in streams {
                    let text = log[stream.rawValue]?.stringValue ?? ""
                    let dropped = log[stream.rawValue + "Dropped"]?.intValue ?? 0
                    if dropped > 0 {
                        Failure.report("\(stream.rawValue) of \(id): its first \(dropped) bytes were cut (promised --max-log-bytes)")
                    }
                    guard !text.isEmpty else { continue }
                    Output.write(lines(of: text, ledBy: id), to: stream == .stdout ? STDOUT_FILENO : STDERR_FILENO)
                }
            }
        }
    }

    /// `text`'s lines, each as `id: line`, every one ended by a newline.
    static func lines(of text: String, ledBy id: String) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        return lines.map { id + ": " + $0 + "\n" }.joined()
    }
}
