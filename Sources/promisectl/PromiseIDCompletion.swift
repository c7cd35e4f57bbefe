import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// Shell completion of promise ids: the ids the daemon holds that start
/// with the word being typed, asked with `list` over the socket promisectl
/// would use (`--socket` on the line, else the usual search).
///
/// A shell waits for it at each Tab, so it asks once, with a short
/// timeout, and offers nothing (prints nothing) when no daemon answers.
enum PromiseIDCompletion {
    /// The most ids offered.
    static let limit = 200
    /// How long the daemon has to answer.
    static let timeout = Duration.milliseconds(500)

    static var kind: CompletionKind { .custom { words, _, prefix in ids(startingWith: prefix, words: words) } }

    /// The ids that start with `prefix`, or none when the daemon does not answer.
    static func ids(startingWith prefix: String, words: [String]) -> [String] {
        let socket = explicitSocket(in: words)
        guard let client = try? BlockingPromiseClient(socketPath: SocketPath.resolve(explicit: socket), timeout: timeout) else {
            return []
        }
        defer { client.close() }
        var params: [String: JSONValue] = ["limit": .int(limit)]
        if !prefix.isEmpty { params["prefix"] = .string(prefix) }
        guard let page = try? client.call("list", params) else { return [] }
        return (page["promises"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
    }

    /// `--socket PATH` or `--socket=PATH` among the words typed so far.
    static func explicitSocket(in words: [String]) -> String? {
        for (index, word) in words.enumerated() {
            if word.hasPrefix("--socket=") { return String(word.dropFirst("--socket=".count)) }
            if word == "--socket", index + 1 < words.count { return words[index + 1] }
        }
        return nil
    }
}
