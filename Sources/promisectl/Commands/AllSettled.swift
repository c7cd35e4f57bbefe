import ArgumentParser
import PromiseClient
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct AllSettled: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "all-settled",
            abstract: "Make a promise fulfilled once every input settled, with their outcomes; print its id.",
            discussion: """
                It never rejects: its value lists each input's outcome, in order.

                Example:
                  report=$(promisectl all-settled test/unit test/e2e)
                  promisectl wait "$report" | jq .
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var inputs: CombinatorOptions

        func run(with client: BlockingPromiseClient) throws {
            try inputs.combine("allSettled", with: client)
        }
    }
}
