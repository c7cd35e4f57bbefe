import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Cancel: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "cancel",
            abstract: "Cancel a promise and its pending descendants, or every pending promise under a prefix.",
            discussion: """
                Processes the daemon runs for descendants (then … -- CMD) and commands \
                run by `promisectl run` for them are stopped (TERM, then KILL).

                --prefix P cancels every pending promise whose id starts with P (compared \
                byte for byte), each as `cancel ID` would, and prints how many it \
                cancelled. The daemon looks at 10,000 promises per request (about a \
                millisecond of its time), so over a million held this takes a hundred requests.

                Example:
                  promisectl cancel build/lib
                  promisectl cancel --prefix build/     # the whole pipeline: prints e.g. 21
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promise's id.", completion: PromiseIDCompletion.kind)
        var id: String?

        @Option(help: ArgumentHelp("Cancel every pending promise whose id starts with this.", valueName: "prefix"))
        var prefix: String?

        func validate() throws {
            switch (id, prefix) {
            case (nil, nil): throw ValidationError("give the promise's id, or --prefix P")
            case (.some, .some): throw ValidationError("give either an id or --prefix, not both")
            case (nil, .some("")): throw ValidationError("--prefix must not be empty")
            default: break
            }
        }

        func run(with client: BlockingPromiseClient) throws {
            if let prefix {
                Output.line(String(try PrefixCancellation.cancel(prefix, with: client)))
            } else if let id {
                try client.call("cancel", ["id": .string(id)])
            }
        }
    }
}

/// `cancel --prefix`: `cancelPrefix` requests, each going on from the
/// cursor the last one answered, until none is left.
enum PrefixCancellation {
    /// Cancels every pending promise under `prefix`; returns how many were cancelled.
    static func cancel(_ prefix: String, with client: BlockingPromiseClient) throws -> Int {
        var total = 0
        var params: [String: JSONValue] = ["prefix": .string(prefix)]
        while true {
            let answer = try client.call("cancelPrefix", params)
            total += answer["cancelled"]?.intValue ?? 0
            guard let cursor = answer["cursor"]?.stringValue else { return total }
            params["cursor"] = .string(cursor)
        }
    }
}
