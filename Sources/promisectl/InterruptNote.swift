import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// What plain `wait` says when Ctrl-C ends it: the daemon's steps go on,
/// and which command stops them.
///
/// ```
/// promisectl: interrupted: build/link still runs; promisectl cancel build/src stops it
/// ```
///
/// The pipeline's root is found from the waited promise up: its `parent`,
/// else its first input (a combinator), until a promise has neither.
enum InterruptNote {
    /// The most records read on the way up (each one `get`).
    static let maxSteps = 64

    /// The line for `id`, or nil when it is not pending or the daemon does
    /// not answer within a second.
    static func text(for id: String, socketPath: String) -> String? {
        guard let client = try? BlockingPromiseClient(socketPath: socketPath, timeout: .seconds(1)) else { return nil }
        defer { client.close() }
        guard let record = try? client.call("get", ["id": .string(id)]), record["state"]?.stringValue == "pending" else {
            return nil
        }
        var root = id
        var current = record
        var seen: Set<String> = [id]
        for _ in 0..<maxSteps {
            guard let next = upstream(of: current), seen.insert(next).inserted,
                let above = try? client.call("get", ["id": .string(next)])
            else { break }
            root = next
            current = above
        }
        return "interrupted: \(id) still runs; promisectl cancel \(root) stops it"
    }

    /// The promise `record` follows: its parent, else its first input.
    static func upstream(of record: JSONValue) -> String? {
        if let parent = record["parent"]?.stringValue { return parent }
        return record["inputs"]?.arrayValue?.first?.stringValue
    }
}
