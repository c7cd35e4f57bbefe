import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Pool: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "pool",
            abstract: "Set a pool's limit, or show one pool.",
            discussion: """
                A pool is a number of slots: each `then … exec` step naming it (--pool) \
                takes one to run its command, and so does `promisectl run --pool`; \
                the others wait their turn, first come first served. With LIMIT, sets \
                the pool's limit (making the pool if needed; 0 pauses it) and starts \
                what can start; without, shows it. Prints the pool as JSON: limit, \
                running, queued, and (shown only) its first holders and waiting turns. \
                A limit set here lasts until the daemon stops: give lasting ones to \
                promised --pool NAME=N.

                Example:
                  promisectl pool cc 4
                  promisectl pool default
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The pool's name (letters, digits, ., _ and -; `default` is the pool of steps that name none).")
        var name: String

        @Argument(help: "Slots it has, 0 to 65536.")
        var limit: Int?

        func validate() throws {
            guard DaemonLimits.isValidPoolName(name) else {
                throw ValidationError("a pool name is 1 to 64 letters, digits, ., _ or -, not \(name)")
            }
            if let limit, !(0...DaemonLimits.maxPoolLimit).contains(limit) {
                throw ValidationError("LIMIT must be 0 to \(DaemonLimits.maxPoolLimit)")
            }
        }

        func run(with client: BlockingPromiseClient) throws {
            if let limit {
                try client.call("pool.set", ["pool": .string(name), "limit": .int(limit)])
            }
            guard let pool = try client.call("info")["pools"]?[name] else {
                throw RPCError(.invalidParams, "no pool named \"\(name)\"", data: ["param": "pool"])
            }
            Output.line(Output.json(pool))
        }
    }

    struct Pools: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "pools",
            abstract: "List the daemon's pools: limit, slots held, turns queued.",
            discussion: """
                One line per pool, by name: NAME LIMIT RUNNING QUEUED. With --json, \
                info's `pools` object, which also names the first holders and waiting turns.

                Example:
                  promisectl pools
                  promisectl pools --json
                """)

        @OptionGroup var connection: ConnectionOptions

        @Flag(help: "Print info's pools object as JSON.")
        var json = false

        func run(with client: BlockingPromiseClient) throws {
            let pools = try client.call("info")["pools"] ?? [:]
            if json { return Output.line(Output.json(pools)) }
            let rows = (pools.objectValue ?? [:]).sorted(by: { $0.key < $1.key }).map { name, pool in
                [name] + ["limit", "running", "queued"].map { pool[$0]?.intValue.map(String.init) ?? "?" }
            }
            let header = ["NAME", "LIMIT", "RUNNING", "QUEUED"]
            // A terminal gets aligned columns; scripts read the words one space apart, as always.
            let lines = Terminal.standardOutputIsTerminal
                ? TextColumns.lines(header: header, rows: rows) : ([header] + rows).map { $0.joined(separator: " ") }
            Output.line(lines.joined(separator: "\n"))
        }
    }
}
