import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
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

                --raw prints only the value, as `wait --raw` does (a string without \
                quotes), for `$(...)`. A promise that has no value prints nothing on \
                stdout: rejected or cancelled, the reason goes to stderr (exit 1 or 2); \
                still pending, it exits 3, as a wait that ran out of time does, so that \
                an empty output is never mistaken for an empty value.

                On a terminal (or with --human) lines follow that say what the step is \
                doing: the progress message, running and the pid of its command, the \
                command, when it started, how long it took, its exit status. Piped or \
                redirected, without --human, only the first line is printed, as before.

                Example:
                  promisectl get build/lib
                  promisectl get build/lib --human
                  promisectl get build/lib --json | jq .progressMessage
                  version=$(promisectl get release/version --raw)
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promise's id.", completion: PromiseIDCompletion.kind)
        var id: String

        @Flag(help: "Print the record as JSON.")
        var json = false

        @Flag(help: "Print the details for people even when stdout is not a terminal.")
        var human = false

        @Flag(help: "Print only the value, a string without quotes; exit 3 while pending.")
        var raw = false

        var call: Call { Call(socket: connection.socket, id: id, json: json, human: human, raw: raw) }

        /// The parsed line (see ``ClientCall``).
        struct Call: ClientCall {
            var socket: String?
            var id: String
            var json = false
            var human = false
            var raw = false

            func validate() throws {
                if [json, human, raw].filter({ $0 }).count > 1 {
                    throw ValidationError("--json, --human and --raw exclude each other")
                }
            }

            func run(with client: BlockingPromiseClient) throws {
                let record = try BlockingPromiseClient.Record(client.call("get", ["id": .string(id)]))
                if raw {
                    try printRaw(record)
                    return
                }
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

            /// `--raw`: the value alone on stdout, or nothing there and the reason on stderr.
            private func printRaw(_ record: BlockingPromiseClient.Record) throws {
                switch record.state {
                case .fulfilled:
                    Output.line(Output.value(record.value ?? .null, raw: true))
                case .pending:
                    Failure.report("\(id) is pending")
                    throw ExitCode.timedOut
                case .rejected, .cancelled:
                    FailureReport.report(record, waitedFor: id)
                    throw ExitCode(state: record.state)
                }
            }
        }
    }
}
