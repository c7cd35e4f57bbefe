import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct List: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List promises: a table on a terminal, one \"id<TAB>state\" line each elsewhere.",
            discussion: """
                Follows the daemon's pages until the end (or --limit). On a terminal (or with \
                --human) it prints a table: ID, STATE (pending, running while an exec step's \
                command runs, queued while it waits in a pool, fulfilled, rejected, \
                cancelled), PID of the running command, STARTED (local time the command \
                started, else the promise was created), DURATION (until settled, else until \
                now), EXIT status of the command, and PROGRESS with its message. Piped or \
                redirected it prints "id<TAB>state" lines, as it always did, and --json one \
                record per line: scripts should use --json.

                Example:
                  promisectl list --prefix build/ --state pending
                  promisectl list --prefix build/ --human | less
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

        @Flag(help: "Print the table even when stdout is not a terminal.")
        var human = false

        func validate() throws {
            if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
            if json && human { throw ValidationError("--json and --human exclude each other") }
        }

        func run(with client: BlockingPromiseClient) throws {
            var cursor: JSONValue = .null
            var printed = 0
            var table = (human || (!json && Terminal.standardOutputIsTerminal)) ? PromiseTable() : nil
            repeat {
                var params: [String: JSONValue] = [:]
                if let state { params["state"] = .string(state.rawValue) }
                if let prefix { params["prefix"] = .string(prefix) }
                // The daemon takes up to 10000 per page.
                params["limit"] = .int(min(limit.map { $0 - printed } ?? 1000, 10_000))
                if !cursor.isNull { params["cursor"] = cursor }
                let page = try client.call("list", params)
                let records = try (page["promises"]?.arrayValue ?? []).map(BlockingPromiseClient.Record.init)
                if let lines = table?.lines(for: records.map(RecordView.init), now: Terminal.nowMilliseconds()) {
                    if !lines.isEmpty { Output.line(lines.joined(separator: "\n")) }
                } else {
                    for record in records {
                        Output.line(json ? Output.json(record.json) : "\(record.id)\t\(record.state.rawValue)")
                    }
                }
                printed += records.count
                cursor = page["cursor"] ?? .null
            } while !cursor.isNull && (limit.map { printed < $0 } ?? true)
            if let lines = table?.finish(), !lines.isEmpty { Output.line(lines.joined(separator: "\n")) }
        }
    }
}
