import ArgumentParser
import PromiseRPC

extension PromiseCtl {
    struct All: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "all",
            abstract: "Make a promise fulfilled with every input's value, in order; print its id.",
            discussion: """
                Policies: fail-fast (default: rejects with the first rejection), all-errors \
                (waits for all, rejects with every failure), ignore-errors (fulfils with the \
                values of the fulfilled inputs), nulls (fulfils with null in place of each failure).

                Example:
                  joined=$(promisectl all job/1 job/2 job/3 --id jobs/all)
                  promisectl wait "$joined"            # [v1,v2,v3]
                  promisectl all a b --policy nulls    # [1,null] when b is rejected
                """)

        enum Policy: String, ExpressibleByArgument, CaseIterable {
            case failFast = "fail-fast", allErrors = "all-errors", ignoreErrors = "ignore-errors", nulls
        }

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var inputs: CombinatorOptions

        @Option(help: "fail-fast, all-errors, ignore-errors or nulls.")
        var policy: Policy = .failFast

        func run(with client: PromiseClient) throws {
            try inputs.combine("all", extra: ["policy": .string(policy.rawValue)], with: client)
        }
    }
}
