import ArgumentParser
import PromiseRPC

extension PromiseCtl {
    struct List: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List promises, one per line: id, state.",
            discussion: """
                Follows the daemon's pages until the end (or --limit). --json prints one \
                record per line.

                Example:
                  promisectl list --prefix build/ --state pending
                  promisectl list --json | jq -r 'select(.state=="rejected") | .id'
                """)

        enum StateFilter: String, ExpressibleByArgument, CaseIterable {
            case pending, fulfilled, rejected, cancelled
        }

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "Only promises in this state.")
        var state: StateFilter?

        @Option(help: "Only ids starting with this.")
        var prefix: String?

        @Option(help: "At most this many.")
        var limit: Int?

        @Flag(help: "Print records as JSON lines.")
        var json = false

        func validate() throws {
            if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        }

        func run(with client: PromiseClient) throws {
            var cursor: JSONValue = .null
            var printed = 0
            repeat {
                var params: [String: JSONValue] = [:]
                if let state { params["state"] = .string(state.rawValue) }
                if let prefix { params["prefix"] = .string(prefix) }
                // The daemon takes up to 10000 per page.
                params["limit"] = .int(min(limit.map { $0 - printed } ?? 1000, 10_000))
                if !cursor.isNull { params["cursor"] = cursor }
                let page = try client.call("list", params)
                for item in page["promises"]?.arrayValue ?? [] {
                    let record = try PromiseClient.Record(item)
                    Output.line(json ? Output.json(record.json) : "\(record.id)\t\(record.state.rawValue)")
                    printed += 1
                }
                cursor = page["cursor"] ?? .null
            } while !cursor.isNull && (limit.map { printed < $0 } ?? true)
        }
    }
}
