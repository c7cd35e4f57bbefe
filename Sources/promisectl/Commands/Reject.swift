import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Reject: CallingCommand {
        static let configuration = CommandConfiguration(
            commandName: "reject",
            abstract: "Reject a promise with a reason.",
            discussion: """
                The reason is {"message":MESSAGE,"code":N,"data":JSON}; code and data are optional.

                Example:
                  promisectl reject build/lib "compiler crashed" --code 139 --data '{"log":"build.log"}'
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promise's id.", completion: PromiseIDCompletion.kind)
        var id: String

        @Argument(help: "Why it failed.")
        var message: String = "rejected"

        @Option(help: "An integer error code.")
        var code: Int?

        @Option(help: "More details, as JSON.")
        var data: String?

        var call: Call { Call(socket: connection.socket, id: id, message: message, code: code, data: data) }

        /// The parsed line (see ``ClientCall``).
        struct Call: ClientCall {
            var socket: String?
            var id: String
            var message = "rejected"
            var code: Int?
            var data: String?

            func run(with client: BlockingPromiseClient) throws {
                var reason: [String: JSONValue] = ["message": .string(message)]
                if let code { reason["code"] = .int(code) }
                if let data { reason["data"] = try ValueInput.json(data, what: "--data") }
                try client.call("reject", ["id": .string(id), "reason": .object(reason)])
            }
        }
    }
}
