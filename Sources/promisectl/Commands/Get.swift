import ArgumentParser
import PromiseRPC

extension PromiseCtl {
    struct Get: CallingCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Show a promise's state and value without waiting.",
            discussion: """
                Prints "pending", "fulfilled VALUE", "rejected: MESSAGE (code N)" or \
                "cancelled: MESSAGE"; --json prints the whole record. Exits 0 when pending \
                or fulfilled, 1 when rejected, 2 when cancelled.

                On a terminal (or with --human) lines follow that say what the step is \
                doing: the progress message, running and the pid of its command, the \
                command, when it started, how long it took, its exit status. Piped or \
                redirected, without --human, only the first line is printed, as before.

                Example:
                  promisectl get build/lib
                  promisectl get build/lib --human
                  promisectl get build/lib --json | jq .progressMessage
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promise's id.")
        var id: String

        @Flag(help: "Print the record as JSON.")
        var json = false

        @Flag(help: "Print the details for people even when stdout is not a terminal.")
        var human = false

        var call: Call { Call(socket: connection.socket, id: id, json: json, human: human) }

        /// The parsed line (see ``ClientCall``).
        struct Call: ClientCall {
            var socket: String?
            var id: String
            var json = false
            var human = false

            func validate() throws {
                if json && human { throw ValidationError("--json and --human exclude each other") }
            }

            func run(with client: PromiseClient) throws {
                let record = try PromiseClient.Record(client.call("get", ["id": .string(id)]))
                if json {
                    Output.line(Output.json(record.json))
                } else if human || Terminal.standardOutputIsTerminal {
                    let details = RecordDetails.lines(for: RecordView(record), now: Terminal.nowMilliseconds())
                    Output.line(([Output.summary(of: record)] + details).joined(separator: "\n"))
                } else {
                    Output.line(Output.summary(of: record))
                }
                let status = ExitCode(state: record.state)
                if status != .success { throw status }
            }
        }
    }
}
