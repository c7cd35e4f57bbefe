import ArgumentParser
import Foundation
import PromiseRPC

extension PromiseCtl {
    struct Then: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "then",
            abstract: "Chain a child promise that the daemon settles, optionally by running a command.",
            discussion: """
                When ID settles as --on asks (fulfilled by default), the daemon runs CMD in \
                a process group of its own, in the current directory, with ID's value as \
                JSON on stdin. Exit 0 fulfils the child with CMD's stdout (as JSON if it \
                parses, else as a string); another status rejects it with code = the status \
                and message = the end of stderr. Without CMD the child settles as ID does. \
                Prints the child's id. Cancelling the child stops CMD (TERM, then KILL).

                Example:
                  promisectl then build/lib --id build/test -- make test
                  promisectl then build/all --on rejected -- sh -c 'cat > failure.json'
                """)

        enum Trigger: String, ExpressibleByArgument, CaseIterable {
            case fulfilled, rejected, settled
        }

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The parent promise's id.")
        var id: String

        @Option(name: .customLong("id"), help: ArgumentHelp("The child's id (made by the daemon when absent).", valueName: "child"))
        var childID: String?

        @Option(help: "When the child runs: fulfilled, rejected or settled.")
        var on: Trigger = .fulfilled

        @Option(help: ArgumentHelp("Directory CMD runs in (default: the current one).", valueName: "dir"), completion: .directory)
        var cwd: String?

        @Option(name: .customLong("env"), help: ArgumentHelp("An environment variable for CMD (repeatable).", valueName: "name=value"))
        var environment: [String] = []

        @Argument(parsing: .postTerminator, help: "The command the daemon runs, after --.")
        var command: [String] = []

        func validate() throws {
            for entry in environment where !entry.contains("=") || entry.hasPrefix("=") {
                throw ValidationError("--env takes NAME=VALUE, got \(entry)")
            }
            if command.isEmpty && (cwd != nil || !environment.isEmpty) {
                throw ValidationError("--cwd and --env need a command after --")
            }
        }

        func run(with client: PromiseClient) throws {
            var params: [String: JSONValue] = ["id": .string(id), "on": .string(on.rawValue)]
            if let childID { params["childId"] = .string(childID) }
            if !command.isEmpty {
                params["exec"] = .array(command.map { .string($0) })
                params["cwd"] = .string(cwd ?? FileManager.default.currentDirectoryPath)
                if !environment.isEmpty {
                    var variables: [String: JSONValue] = [:]
                    for entry in environment {
                        let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                        variables[String(parts[0])] = .string(parts.count > 1 ? String(parts[1]) : "")
                    }
                    params["env"] = .object(variables)
                }
            }
            let record = try PromiseClient.Record(client.call("then", params))
            Output.line(record.id)
        }
    }
}
