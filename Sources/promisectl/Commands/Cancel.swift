import ArgumentParser
import PromiseRPC

extension PromiseCtl {
    struct Cancel: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "cancel",
            abstract: "Cancel a promise and its pending descendants.",
            discussion: """
                Processes the daemon runs for descendants (then … -- CMD) and commands \
                run by `promisectl run` for them are stopped (TERM, then KILL).

                Example:
                  promisectl cancel build/lib
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promise's id.")
        var id: String

        func run(with client: PromiseClient) throws {
            try client.call("cancel", ["id": .string(id)])
        }
    }
}
