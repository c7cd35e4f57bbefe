import ArgumentParser
import PromiseRPC

extension PromiseCtl {
    struct Wait: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "wait",
            abstract: "Block until a promise settles, then print its value.",
            discussion: """
                The promise need not exist yet: the wait is answered once it is created \
                and settled. Prints the value as JSON (--raw: a string without quotes; \
                --json: the whole record, in every state). Exits 0 fulfilled, 1 rejected \
                (the reason goes to stderr), 2 cancelled, 3 when --timeout passes first \
                or when the promise was rejected by its own timeout (create --timeout).

                Example:
                  promisectl wait build/lib --timeout 600
                  version=$(promisectl wait release/version --raw)
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var reconnect: ReconnectOptions

        @Argument(help: "The promise's id.")
        var id: String

        @Option(help: ArgumentHelp("Give up after this many seconds (exit 3).", valueName: "sec"))
        var timeout: Double?

        @Flag(help: "Print the record as JSON.")
        var json = false

        @Flag(help: "Print a string value without quotes.")
        var raw = false

        func validate() throws {
            if let timeout, !(timeout >= 0) || !timeout.isFinite {
                throw ValidationError("--timeout must be a number of seconds, 0 or more")
            }
            if json && raw { throw ValidationError("--json and --raw exclude each other") }
        }

        func run(with client: PromiseClient) throws {
            let record: PromiseClient.Record
            do {
                // Asks again, on a new connection, when the daemon restarts meanwhile.
                let limit = timeout.map { Duration.milliseconds(ValueInput.milliseconds(seconds: $0)) }
                record = try reconnect.reconnecting(client).wait(for: id, timeout: limit)
            } catch let error as RPCError where error.code == .waitTimedOut {
                Failure.report("timed out waiting for \(id)")
                throw ExitCode.timedOut
            }
            if json {
                Output.line(Output.json(record.json))
            } else if record.state == .fulfilled {
                Output.line(Output.value(record.value ?? .null, raw: raw))
            } else {
                Failure.report("\(id) \(record.state.rawValue)\(Output.reasonSuffix(record))")
            }
            let status = ExitCode.forWaitedRecord(record)
            if status != .success { throw status }
        }
    }
}
