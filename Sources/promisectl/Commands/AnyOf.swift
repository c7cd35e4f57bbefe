import ArgumentParser
import PromiseClient
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct AnyOf: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "any",
            abstract: "Make a promise fulfilled by the first input to fulfil; print its id.",
            discussion: """
                It is rejected only when every input is rejected.

                Example:
                  mirror=$(promisectl any fetch/eu fetch/us)
                  promisectl wait "$mirror" --raw
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var inputs: CombinatorOptions

        func run(with client: BlockingPromiseClient) throws {
            try inputs.combine("any", with: client)
        }
    }
}
