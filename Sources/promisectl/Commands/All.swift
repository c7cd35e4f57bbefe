import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct All: CallingCommand {
        static let configuration = CommandConfiguration(
            commandName: "all",
            abstract: "Make a promise fulfilled with every input's value, in order; print its id.",
            discussion: """
                Policies: fail-fast (default: rejects with the first rejection), all-errors \
                (waits for all, rejects with every failure), ignore-errors (fulfils with the \
                values of the fulfilled inputs), nulls (fulfils with null in place of each failure).

                --stop-on-failure (fail-fast only): once one input fails, the inputs still \
                pending are given up: each one this all was the last consumer of is \
                cancelled (a queued step never starts, a running command is stopped); one \
                another promise still consumes carries on. Without it (the default) the \
                other inputs run on.

                Example:
                  joined=$(promisectl all job/1 job/2 job/3 --id jobs/all)
                  promisectl wait "$joined"            # [v1,v2,v3]
                  promisectl all a b --policy nulls    # [1,null] when b is rejected
                  promisectl all cc/f01 cc/f02 --id cc/objs --stop-on-failure
                """)

        enum Policy: String, ExpressibleByArgument, CaseIterable {
            case failFast = "fail-fast", allErrors = "all-errors", ignoreErrors = "ignore-errors", nulls
        }

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var inputs: CombinatorOptions

        @Option(help: "fail-fast, all-errors, ignore-errors or nulls.")
        var policy: Policy = .failFast

        @Flag(help: "Once one input fails, cancel the inputs still pending that nothing else consumes.")
        var stopOnFailure = false

        var call: Call {
            Call(socket: connection.socket, inputs: inputs.plain, policy: policy, stopOnFailure: stopOnFailure)
        }

        /// The parsed line (see ``ClientCall``).
        struct Call: ClientCall {
            var socket: String?
            var inputs: CombinatorInputs
            var policy: Policy = .failFast
            var stopOnFailure = false

            func validate() throws {
                try inputs.validate()
                if stopOnFailure && policy != .failFast {
                    throw ValidationError("--stop-on-failure needs --policy fail-fast: the others wait for every input")
                }
            }

            func run(with client: BlockingPromiseClient) throws {
                var extra: [String: JSONValue] = ["policy": .string(policy.rawValue)]
                if stopOnFailure { extra["stopOnFailure"] = true }
                try inputs.combine("all", extra: extra, with: client)
            }
        }
    }
}
