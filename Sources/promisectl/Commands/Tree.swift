import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Tree: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "tree",
            abstract: "Draw the pipeline under a promise: its then-steps and the combinators it feeds.",
            discussion: """
                Starts at ID and follows each promise's then-children (`children`) and the \
                combinators it is an input of (`consumers`), down to the end. One line per \
                promise: id, how it was made (then, exec: COMMAND, all of N…), state \
                (running and the pid while an exec step's command runs; the reason when \
                rejected), [duration], exit status, progress; the step where a failure \
                started is marked "← failed here". Commands longer than 60 characters lose \
                their middle ("…"), keeping the file names at their end. A combinator fed \
                by several steps is drawn under the first; the others end their line with \
                "→ ID (above)".

                Records are fetched in batches of 50 `get`s, level by level, up to \
                --max-nodes promises (then a last line says it stopped there). --dot \
                writes the same graph for Graphviz: then-links solid, combinator inputs \
                dashed, the failing step outlined in red.

                Example:
                  promisectl tree pipe
                  pipe  fulfilled  [2.1s]
                  ├── pipe/a  exec: make a  fulfilled  [1.2s]  exit 0
                  │   └── pipe/join  all of 2  rejected: 1 of 2 input promises were rejected  [1.9s]
                  └── pipe/b  exec: make b  rejected: no rule to make b  [0.9s]  exit 2  ← failed here  → pipe/join (above)

                  promisectl tree pipe --dot | dot -Tsvg > pipe.svg
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promise at the top of the drawing.", completion: PromiseIDCompletion.kind)
        var id: String

        @Flag(help: "Write Graphviz DOT instead of a drawing.")
        var dot = false

        @Flag(help: "Draw with ASCII (|-- `--) instead of box-drawing characters.")
        var ascii = false

        @Option(help: ArgumentHelp("Fetch at most this many promises.", valueName: "n"))
        var maxNodes = 10_000

        func validate() throws {
            if maxNodes < 1 { throw ValidationError("--max-nodes must be at least 1") }
            if dot && ascii { throw ValidationError("--dot and --ascii exclude each other") }
        }

        func run(with client: BlockingPromiseClient) throws {
            let root = try BlockingPromiseClient.Record(client.call("get", ["id": .string(id)]))
            let graph = try PromiseGraph.load(root: root, maxNodes: maxNodes) { ids in
                try Self.records(ids, client: client)
            }
            let now = Terminal.nowMilliseconds()
            let lines = dot
                ? DotRenderer().lines(for: graph, now: now)
                : TreeRenderer(style: ascii ? .ascii : .box).lines(for: graph, now: now)
            Output.line(lines.joined(separator: "\n"))
        }

        /// The records of `ids`, in one batch of `get`s; ids forgotten meanwhile are left out.
        static func records(_ ids: [String], client: BlockingPromiseClient) throws -> [BlockingPromiseClient.Record] {
            let answers = try client.batch(ids.map { .init("get", ["id": .string($0)]) }, timeout: nil)
            return try answers.compactMap { answer in
                switch answer {
                case .success(let json): return try BlockingPromiseClient.Record(json)
                case .failure(let error) where error.code == .noSuchPromise: return nil
                case .failure(let error): throw error
                }
            }
        }
    }
}
