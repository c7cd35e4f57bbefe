import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Resolve: CallingCommand {
        static let configuration = CommandConfiguration(
            commandName: "resolve",
            abstract: "Fulfil a promise with a value.",
            discussion: """
                VALUE is JSON (a bare word is not: quote strings or pass --string). \
                "-" reads the value from stdin. Without VALUE the value is null. \
                With --string the text is taken as is (from stdin, one trailing newline is dropped). \
                The request must fit in the daemon's maxLineBytes (1 MiB unless promised \
                --max-line-bytes says otherwise): a larger value is refused, exit 64; \
                keep it in a file and resolve with its path.

                Example:
                  promisectl resolve build/lib '{"artifact":"lib.a","ok":true}'
                  promisectl resolve greeting --string "hello world"
                  git rev-parse HEAD | promisectl resolve build/rev - --string
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promise's id.", completion: PromiseIDCompletion.kind)
        var id: String

        @Argument(help: "The value as JSON, or - for stdin.")
        var value: String?

        @Flag(help: "Take the value as a string, not as JSON.")
        var string = false

        var call: Call { Call(socket: connection.socket, id: id, value: value, string: string) }

        /// The parsed line (see ``ClientCall``).
        struct Call: ClientCall {
            var socket: String?
            var id: String
            var value: String?
            var string = false

            func run(with client: BlockingPromiseClient) throws {
                let resolved: JSONValue
                switch (value, string) {
                case (nil, false): resolved = .null
                case (nil, true): throw UsageError("--string needs a VALUE (or - for stdin)")
                case ("-", false): resolved = try ValueInput.json(String(decoding: ValueInput.standardInput(), as: UTF8.self), what: "stdin")
                case ("-", true): resolved = .string(ValueInput.droppingTrailingNewline(ValueInput.standardInput()))
                case (let text?, false): resolved = try ValueInput.json(text, what: "VALUE")
                case (let text?, true): resolved = .string(text)
                }
                try client.call("resolve", ["id": .string(id), "value": resolved])
            }
        }
    }
}
