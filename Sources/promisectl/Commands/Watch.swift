import ArgumentParser
import PromiseClient
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Watch: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract: "Print the notifications of some promises: a line for people on a terminal, else one JSON line each.",
            discussion: """
                Subscribes to each ID and prints every notification as it arrives, as the \
                JSON-RPC message ({"jsonrpc":"2.0","method":"settled","params":RECORD} or \
                method "progress"), until interrupted. A promise already settled is \
                reported at once. At least one ID is needed: the protocol subscribes to \
                ids, not to everything (list the ids with `promisectl list`). \
                With --until-settled it exits 0 once every ID has settled.

                On a terminal (or with --human) each notification is one line for people: \
                the time it came, the id, and the progress and its message, or the state \
                with the value or reason, the duration and the exit status. Piped or \
                redirected (or with --json) it prints the JSON lines above, as it always did.

                Example:
                  promisectl watch build/lib build/test
                  promisectl watch job/1 job/2 --until-settled | jq -r .params.state
                  promisectl watch build/lib --human --until-settled > build.log
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var reconnect: ReconnectOptions

        @Argument(help: "The promises to watch.")
        var ids: [String] = []

        @Flag(help: "Exit once every ID has settled.")
        var untilSettled = false

        @Flag(help: "Print JSON lines even on a terminal.")
        var json = false

        @Flag(help: "Print lines for people even when stdout is not a terminal.")
        var human = false

        func validate() throws {
            if ids.isEmpty { throw ValidationError("watch needs at least one ID") }
            if json && human { throw ValidationError("--json and --human exclude each other") }
        }

        func run(with client: BlockingPromiseClient) throws {
            // Subscribes again after a restart of the daemon: each settlement is printed once.
            let subscription = try reconnect.timeout.reconnecting(client).subscribe(ids)
            let forPeople = human || (!json && Terminal.standardOutputIsTerminal)
            while !(untilSettled && subscription.allSettled) {
                guard let notification = try subscription.next(timeout: nil) else { continue }
                Output.line(forPeople
                    ? EventLine.text(for: notification, now: Terminal.nowMilliseconds())
                    : Output.json(notification.json))
            }
        }
    }
}
