import ArgumentParser
import PromiseRPC

extension PromiseCtl {
    struct Watch: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract: "Print the notifications of some promises, one JSON line each.",
            discussion: """
                Subscribes to each ID and prints every notification as it arrives, as the \
                JSON-RPC message ({"jsonrpc":"2.0","method":"settled","params":RECORD} or \
                method "progress"), until interrupted. A promise already settled is \
                reported at once. At least one ID is needed: the protocol subscribes to \
                ids, not to everything (list the ids with `promisectl list`). \
                With --until-settled it exits 0 once every ID has settled.

                Example:
                  promisectl watch build/lib build/test
                  promisectl watch job/1 job/2 --until-settled | jq -r .params.state
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var reconnect: ReconnectOptions

        @Argument(help: "The promises to watch.")
        var ids: [String] = []

        @Flag(help: "Exit once every ID has settled.")
        var untilSettled = false

        func validate() throws {
            if ids.isEmpty { throw ValidationError("watch needs at least one ID") }
        }

        func run(with client: PromiseClient) throws {
            // Subscribes again after a restart of the daemon: each settlement is printed once.
            let subscription = try reconnect.reconnecting(client).subscribe(ids)
            while !(untilSettled && subscription.allSettled) {
                guard let notification = try subscription.next(timeout: nil) else { continue }
                Output.line(Output.json(notification.json))
            }
        }
    }
}
