import ArgumentParser
import PromiseClient
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Race: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "race",
            abstract: "Make a promise that settles as the first input to settle; print its id.",
            discussion: """
                Example:
                  first=$(promisectl race build/fast build/slow --id build/first)
                  promisectl wait "$first"
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var inputs: CombinatorOptions

        func run(with client: BlockingPromiseClient) throws {
            try inputs.combine("race", with: client)
        }
    }
}
