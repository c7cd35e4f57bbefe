import ArgumentParser
import PromiseClient
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Info: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Show the daemon's version, counts and limits as JSON.",
            discussion: """
                Also a cheap liveness check: exits 69 when no daemon answers.

                Example:
                  promisectl info
                  until promisectl info >/dev/null 2>&1; do sleep 0.1; done
                """)

        @OptionGroup var connection: ConnectionOptions

        func run(with client: BlockingPromiseClient) throws {
            Output.line(Output.json(try client.call("info")))
        }
    }
}
