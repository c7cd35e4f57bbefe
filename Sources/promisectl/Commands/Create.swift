import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Create: CallingCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Create a pending promise and print its id.",
            discussion: """
                Without ID the daemon makes one up. An existing ID is an error (exit 5) \
                unless --if-exists is given, which prints the id of the existing promise. \
                --replace forgets a settled promise of that id first, so that a script \
                run again makes it anew; a pending one is not replaced (exit 5).

                Example:
                  promisectl create build/lib --name "library build" --timeout 600
                  job=$(promisectl create)
                  promisectl create build/src --replace
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The id (printable, up to 256 bytes); made by the daemon when absent.")
        var id: String?

        @Option(help: "A name for people.")
        var name: String?

        @Option(help: ArgumentHelp("Reject the promise when it is still pending after this long: a number of seconds, or with a unit: 90, 10s, 500ms, 2m, 1h." , valueName: "duration"))
        var timeout: CommandDuration?

        @Flag(help: "Succeed with the existing promise when ID is taken, instead of exiting 5.")
        var ifExists = false

        @Flag(help: "Forget a settled promise of this ID first (a pending one is kept: exit 5).")
        var replace = false

        var call: Call {
            Call(socket: connection.socket, id: id, name: name, timeout: timeout?.seconds, ifExists: ifExists, replace: replace)
        }

        /// The parsed line (see ``ClientCall``).
        struct Call: ClientCall {
            var socket: String?
            var id: String?
            var name: String?
            var timeout: Double?
            var ifExists = false
            var replace = false

            func validate() throws {
                if ifExists && replace { throw ValidationError("--if-exists and --replace exclude each other") }
                if let timeout, !(timeout > 0) || !timeout.isFinite {
                    throw ValidationError("--timeout must be a positive number of seconds")
                }
            }

            func run(with client: BlockingPromiseClient) throws {
                var params: [String: JSONValue] = [:]
                if let id { params["id"] = .string(id) }
                if let name { params["name"] = .string(name) }
                if let timeout { params["timeoutMs"] = .int(ValueInput.milliseconds(seconds: timeout)) }
                if ifExists { params["ifExists"] = "get" }
                if replace { params["replace"] = true }
                let record = try BlockingPromiseClient.Record(client.call("create", params))
                Output.line(record.id)
            }
        }
    }
}
