import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Progress: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "progress",
            abstract: "Report how far a pending promise has come.",
            discussion: """
                Subscribers (promisectl watch) receive a progress notification.

                Example:
                  promisectl progress build/lib 0.5 "compiled 120 of 240 files"
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promise's id.", completion: PromiseIDCompletion.kind)
        var id: String

        @Argument(help: "How far, from 0 to 1.")
        var fraction: Double

        @Argument(help: "What is happening.")
        var message: String?

        func validate() throws {
            if !(0...1).contains(fraction) { throw ValidationError("FRACTION must be between 0 and 1, got \(fraction)") }
        }

        func run(with client: BlockingPromiseClient) throws {
            var params: [String: JSONValue] = ["id": .string(id), "progress": .double(fraction)]
            if let message { params["message"] = .string(message) }
            try client.call("progress", params)
        }
    }
}
