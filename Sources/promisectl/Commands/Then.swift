import ArgumentParser
import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Then: CallingCommand {
        static let configuration = CommandConfiguration(
            commandName: "then",
            abstract: "Chain a child promise that the daemon settles, optionally by running a command.",
            discussion: """
                When ID settles as --on asks (fulfilled by default), the daemon runs CMD in \
                a process group of its own, with ID's value as JSON on stdin. Exit 0 fulfils \
                the child with CMD's stdout (as JSON if it parses, else as a string); stdout \
                longer than the daemon's maxProcessOutputBytes (1 MiB unless promised \
                --max-process-output-bytes says otherwise) rejects it instead, code -32004. \
                Another status rejects it with code = the status and message = the end of \
                stderr. Without CMD the child settles as ID does. Prints the child's id. \
                Cancelling the child stops CMD (TERM, then KILL). CMD takes a slot of \
                --pool (else of the daemon's default pool) while it runs; with none \
                free it waits its turn, and the child's record says "queued": true.

                CMD runs in this shell's working directory (or --cwd) with this shell's \
                environment, sent with the request and laid over the daemon's own (a \
                variable unset here but set in the daemon stays set), then --env on top. \
                PROMISE_ID, PROMISE_CHILD_ID and PROMISE_STATE are not sent: the daemon sets \
                them. With --daemon-env only --env is sent and CMD gets the daemon's \
                environment. The request, environment included, must fit in the daemon's \
                maxLineBytes (1 MiB unless promised --max-line-bytes says otherwise). \
                `promisectl logs CHILD` shows the end of CMD's stdout and stderr. \
                --replace forgets a settled promise of the child's id first, so that a \
                script run again makes it anew; a pending one is not replaced (exit 5). \
                --retry N runs a failed CMD (non-zero exit, killed, or lost with its \
                monitor at a restart) again, up to N more times, --retry-delay apart; \
                the child's record counts its "attempts".

                Example:
                  promisectl then build/lib --id build/test -- make test
                  CC=clang promisectl then src --id app -- sh -c '$CC -o app main.c'
                  promisectl then build/all --on rejected --daemon-env -- ./report.sh
                  promisectl then src --pool cc --id obj/a.o -- cc -c a.c
                  promisectl then src --id obj/a.o --replace -- cc -c a.c
                  promisectl then src --id obj/a.o --retry 2 --retry-delay 1s -- cc -c a.c
                """)

        enum Trigger: String, ExpressibleByArgument, CaseIterable {
            case fulfilled, rejected, settled
        }

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The parent promise's id.", completion: PromiseIDCompletion.kind)
        var id: String

        @Option(name: .customLong("id"), help: ArgumentHelp("The child's id (made by the daemon when absent).", valueName: "child"))
        var childID: String?

        @Option(help: "When the child runs: fulfilled, rejected or settled.")
        var on: Trigger = .fulfilled

        @Option(help: ArgumentHelp("Directory CMD runs in, relative to the current one (default: the current one).",
                                   valueName: "dir"), completion: .directory)
        var cwd: String?

        @Option(name: .customLong("env"), help: ArgumentHelp("An environment variable for CMD (repeatable).", valueName: "name=value"))
        var environment: [String] = []

        @Option(help: ArgumentHelp("The pool whose slot CMD takes (promised --pool, promisectl pool).", valueName: "name"))
        var pool: String?

        @Flag(help: "Run CMD with the daemon's environment (plus --env), not this shell's.")
        var daemonEnv = false

        @Flag(help: "Forget a settled promise of the child's id first (a pending one is kept: exit 5).")
        var replace = false

        @Option(help: ArgumentHelp(
            "Run CMD again, up to n more times, when it fails (exits non-zero, or is lost with its monitor) (default 0).",
            valueName: "n"))
        var retry: Int?

        @Option(help: ArgumentHelp("How long to wait before each new try of --retry: seconds, or 500ms, 10s, 2m (default 0).",
                                   valueName: "duration"))
        var retryDelay: CommandDuration?

        @Argument(parsing: .postTerminator, help: "The command the daemon runs, after --.")
        var command: [String] = []

        var call: Call {
            Call(socket: connection.socket, id: id, childID: childID, on: on, cwd: cwd, environment: environment, pool: pool,
                 daemonEnv: daemonEnv, command: command, replace: replace, retry: retry, retryDelay: retryDelay?.seconds)
        }

        /// The parsed line (see ``ClientCall``).
        struct Call: ClientCall {
            var socket: String?
            var id: String
            var childID: String?
            var on: Trigger = .fulfilled
            var cwd: String?
            var environment: [String] = []
            var pool: String?
            var daemonEnv = false
            var command: [String] = []
            var replace = false
            var retry: Int?
            var retryDelay: Double?

            func validate() throws {
                if let retry, !(0...100).contains(retry) { throw ValidationError("--retry takes 0 to 100 more tries") }
                if let retryDelay, !(0...3600).contains(retryDelay) {
                    throw ValidationError("--retry-delay takes 0 to 1 hour (e.g. 500ms, 10s, 2m)")
                }
                if (retry != nil || retryDelay != nil) && command.isEmpty {
                    throw ValidationError("--retry and --retry-delay need a command after --")
                }
                if replace && childID == nil { throw ValidationError("--replace needs the child's --id") }
                for entry in environment where !entry.contains("=") || entry.hasPrefix("=") {
                    throw ValidationError("--env takes NAME=VALUE, got \(entry)")
                }
                if command.isEmpty && (cwd != nil || !environment.isEmpty || daemonEnv) {
                    throw ValidationError("--cwd, --env and --daemon-env need a command after --")
                }
                if pool != nil && command.isEmpty { throw ValidationError("--pool needs a command after --") }
            }

            func run(with client: BlockingPromiseClient) throws {
                var params: [String: JSONValue] = ["id": .string(id), "on": .string(on.rawValue)]
                if let childID { params["childId"] = .string(childID) }
                if let pool { params["pool"] = .string(pool) }
                if replace { params["replace"] = true }
                if let retry { params["retry"] = .int(retry) }
                if let retryDelay { params["retryDelayMs"] = .int(Int((retryDelay * 1000).rounded())) }
                if !command.isEmpty {
                    params["exec"] = .array(command.map { .string($0) })
                    let directory = workingDirectory()
                    params["cwd"] = .string(directory)
                    let variables = commandEnvironment(directory: directory)
                    if !variables.isEmpty { params["env"] = .object(variables.mapValues { .string($0) }) }
                }
                let record: BlockingPromiseClient.Record
                do {
                    record = try BlockingPromiseClient.Record(client.call("then", params))
                } catch let error as RPCError
                    where error.code == .limitExceeded && error.data?["limit"]?.stringValue == "maxLineBytes" && !daemonEnv
                {
                    let size = params["env"].map { $0.serialized().count } ?? 0
                    throw UsageError(
                        "the request, with this shell's environment (\(size) bytes of JSON), is longer than the daemon takes: "
                            + "\(error.message); pass --daemon-env (and --env NAME=VALUE for what CMD needs), or unset large variables")
                }
                Output.line(record.id)
            }

            /// Where CMD runs: --cwd taken from here (the daemon would resolve a
            /// relative one from its own directory), else the current directory.
            private func workingDirectory() -> String {
                let current = FileManager.default.currentDirectoryPath
                guard let cwd else { return current }
                return cwd.hasPrefix("/") ? cwd : URL(fileURLWithPath: cwd, relativeTo: URL(fileURLWithPath: current)).path
            }

            /// The variables sent for CMD: this shell's (unless --daemon-env), with
            /// PWD naming `directory`, then --env. The daemon's own PROMISE_*
            /// variables are left for it to set.
            private func commandEnvironment(directory: String) -> [String: String] {
                var variables: [String: String] = [:]
                if !daemonEnv {
                    variables = ProcessEnvironment.variables()
                    for name in Self.setByDaemon { variables[name] = nil }
                    if variables["PWD"] != nil { variables["PWD"] = directory }
                }
                for entry in environment {
                    let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    variables[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
                }
                return variables
            }

            /// Set by the daemon for every command; a value sent in `env` would win over it.
            private static let setByDaemon = ["PROMISE_ID", "PROMISE_CHILD_ID", "PROMISE_STATE"]
        }
    }
}
