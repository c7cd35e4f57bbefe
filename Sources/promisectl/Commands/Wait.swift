import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Wait: CallingCommand {
        static let configuration = CommandConfiguration(
            commandName: "wait",
            abstract: "Block until a promise settles, then print its value.",
            discussion: """
                The promise need not exist yet: the wait is answered once it is created \
                and settled. Prints the value as JSON (--raw: a string without quotes; \
                --json: the whole record, in every state). Exits 0 fulfilled, 1 rejected \
                (the reason goes to stderr), 2 cancelled, 3 when --timeout passes first \
                or when the promise was rejected by its own timeout (create --timeout). \
                A rejection names the promise where it began (`cc/f07 failed: …`), and each \
                failed input of an `all --policy all-errors` or an `any`.

                --cancel-on-signal: on SIGINT (Ctrl-C) or SIGTERM, cancel the promise \
                (and so the pipeline's steps it needs, their commands stopped), then \
                exit 130 (SIGINT) or 143 (SIGTERM). Without it, Ctrl-C ends only the \
                wait, and on a terminal (stderr) a line says so: "build/link still \
                runs; promisectl cancel build/src stops it", naming the pipeline's root \
                (followed up through each record's parent, or first input).

                --show-output (the default when stderr is a terminal): as each `then … \
                exec` step it waits on ends (itself, and those above it through parents \
                and inputs when the wait starts), what the step wrote on stderr is \
                printed there, each line led by the step's id, so that a warning of a \
                step that succeeded is seen as it comes, as make -j shows it.

                Example:
                  promisectl wait build/lib --timeout 600
                  version=$(promisectl wait release/version --raw)
                  promisectl wait build/all --progress   # a bar on stderr as it moves
                  promisectl wait build/test --cancel-on-signal   # Ctrl-C stops the build
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var reconnect: ReconnectOptions

        @Argument(help: "The promise's id.", completion: PromiseIDCompletion.kind)
        var id: String

        @Option(help: ArgumentHelp("Give up after this long (exit 3): a number of seconds, or with a unit: 90, 10s, 500ms, 2m, 1h.", valueName: "duration"))
        var timeout: CommandDuration?

        @Flag(help: "Print the record as JSON.")
        var json = false

        @Flag(help: "Print a string value without quotes.")
        var raw = false

        @Flag(help: "Show a progress bar on stderr while waiting (a line per change when stderr is not a terminal).")
        var progress = false
        @Flag(help: "On SIGINT or SIGTERM, cancel the promise, then exit 130 or 143.")
        var cancelOnSignal = false

        @Flag(help: "As each step it waits on ends, print on stderr what the step wrote there, each line led by its id (the default when stderr is a terminal).")
        var showOutput = false

        var call: Call {
            Call(socket: connection.socket, reconnect: reconnect.timeout, id: id, timeout: timeout?.seconds, json: json, raw: raw,
                 progress: progress, cancelOnSignal: cancelOnSignal, showOutput: showOutput)
        }

        /// The parsed line (see ``ClientCall``).
        struct Call: ClientCall {
            var socket: String?
            var reconnect = ReconnectTimeout()
            var id: String
            var timeout: Double?
            var json = false
            var raw = false
            var progress = false
            var cancelOnSignal = false
            var showOutput = false

            func validate() throws {
                try reconnect.validate()
                if let timeout, !(timeout >= 0) || !timeout.isFinite {
                    throw ValidationError("--timeout must be a number of seconds, 0 or more")
                }
                if json && raw { throw ValidationError("--json and --raw exclude each other") }
            }

            func run(with client: BlockingPromiseClient) throws {
                let limit = timeout.map { ValueInput.milliseconds(seconds: $0) }
                // A person's Ctrl-C without --cancel-on-signal is told what still runs.
                let armed = cancelOnSignal
                    ? SignalCancellation.arm(cancelling: id, socketPath: SocketPath.resolve(explicit: socket))
                    : Terminal.standardErrorIsTerminal
                        ? SignalCancellation.armNote(for: id, socketPath: SocketPath.resolve(explicit: socket)) : nil
                defer { armed?.disarm() }
                // Asks again, on a new connection, when the daemon restarts meanwhile.
                let connection = reconnect.reconnecting(client)
                let showsOutput = showOutput || Terminal.standardErrorIsTerminal
                var record: BlockingPromiseClient.Record?
                var printedOutput = false
                if showsOutput && !progress {
                    switch try StepOutputWait.wait(for: id, timeout: limit.map { .milliseconds($0) }, connection: connection) {
                    case .settled(let settled):
                        record = settled
                        printedOutput = true
                    case .timedOut:
                        Failure.report("timed out waiting for \(id)")
                        throw ExitCode.timedOut
                    case .unavailable:
                        break
                    }
                }
                do {
                    if record == nil, progress {
                        var params: [String: JSONValue] = ["id": .string(id)]
                        if let limit { params["timeoutMs"] = .int(limit) }
                        record = try BlockingPromiseClient.Record(ProgressBar.wait(for: id, params: params, connection: connection))
                    } else if record == nil {
                        record = try connection.wait(for: id, timeout: limit.map { .milliseconds($0) })
                    }
                    armed?.disarm()
                } catch let error as RPCError where error.code == .waitTimedOut {
                    Failure.report("timed out waiting for \(id)")
                    throw ExitCode.timedOut
                }
                guard let record else { preconditionFailure("every path above settles or throws") }
                if showsOutput && !printedOutput {
                    try? PrefixedLogs.print(UpstreamSteps.ids(above: id, with: connection.client), streams: [.stderr],
                                            with: connection.client)
                }
                if json {
                    Output.line(Output.json(record.json))
                } else if record.state == .fulfilled {
                    Output.line(Output.value(record.value ?? .null, raw: raw))
                } else {
                    FailureReport.report(record, waitedFor: id)
                }
                let status = ExitCode.forWaitedRecord(record)
                if status != .success { throw status }
            }
        }
    }
}
