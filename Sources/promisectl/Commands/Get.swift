import ArgumentParser
import PromiseRPC

extension PromiseCtl {
    struct Get: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Show a promise's state and value without waiting.",
            discussion: """
                Prints "pending", "fulfilled VALUE", "rejected: MESSAGE (code N)" or \
                "cancelled: MESSAGE"; --json prints the whole record. Exits 0 when pending \
                or fulfilled, 1 when rejected, 2 when cancelled.

                Example:
                  promisectl get build/lib
                  promisectl get build/lib --json | jq .state
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promise's id.")
        var id: String

        @Flag(help: "Print the record as JSON.")
        var json = false

        func run(with client: PromiseClient) throws {
            let record = try PromiseClient.Record(client.call("get", ["id": .string(id)]))
            Output.line(json ? Output.json(record.json) : Output.summary(of: record))
            let status = ExitCode(state: record.state)
            if status != .success { throw status }
        }
    }
}
