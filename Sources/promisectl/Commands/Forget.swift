import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Forget: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget",
            abstract: "Drop settled promises from the daemon, so that their ids may be created again.",
            discussion: """
                A promise still pending is kept, and so is a settled one that a pending \
                promise needs (the parent of a pending then child, an input of a pending \
                combinator, or, in a durable daemon, a parent whose value a then child \
                shares): forget it again once that one has settled. Each id not forgotten \
                gets one line on stderr saying why.

                With --prefix P, every settled promise whose id starts with P is \
                forgotten (page after page, as cancel --prefix goes), and the number \
                forgotten is printed; one line on stderr counts those kept, pending or \
                needed. A script run again starts with it, or makes its promises with \
                create --replace and then --replace.

                Exit status: 0 when every ID (or every promise under P) was forgotten; \
                5 when one was kept (pending or needed); else 4 when one has no promise.

                Example:
                  promisectl forget build/lib build/app
                  promisectl forget --prefix build/
                  promisectl list --state fulfilled | cut -f1 | xargs promisectl forget
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promises' ids.", completion: PromiseIDCompletion.kind)
        var ids: [String] = []

        @Option(help: ArgumentHelp("Forget every settled promise whose id starts with this.", valueName: "prefix"))
        var prefix: String?

        func validate() throws {
            if let prefix {
                if prefix.isEmpty { throw ValidationError("--prefix must not be empty: it would forget every settled promise") }
                if !ids.isEmpty { throw ValidationError("forget takes IDs or --prefix, not both") }
            } else if ids.isEmpty {
                throw ValidationError("forget needs at least one ID, or --prefix")
            }
        }

        /// Ids per batch: the daemon's default `maxBatchSize`.
        private static let batchSize = 1_000

        func run(with client: BlockingPromiseClient) throws {
            if let prefix { return try forget(prefix: prefix, with: client) }
            var seen = Set<String>()
            let distinct = ids.filter { seen.insert($0).inserted }
            var kept = false
            var unknown = false
            // One `forget` per id, so that each answer says what became of that id.
            for start in stride(from: 0, to: distinct.count, by: Self.batchSize) {
                let chunk = distinct[start..<min(start + Self.batchSize, distinct.count)]
                let answers = try client.batch(chunk.map { .init("forget", ["ids": [.string($0)]]) }, timeout: nil)
                for (id, answer) in zip(chunk, answers) {
                    let result = try answer.get()
                    if result["pending"]?.arrayValue?.isEmpty == false {
                        kept = true
                        Failure.report("\(id) is pending: not forgotten")
                    } else if result["needed"]?.arrayValue?.isEmpty == false {
                        kept = true
                        Failure.report("\(id) is needed by a pending promise (a then child or a combinator): not forgotten; forget it once that has settled")
                    } else if result["forgotten"]?.intValue != 1 {
                        unknown = true
                        Failure.report("no such promise: \(id)")
                    }
                }
            }
            if kept { throw ExitCode.alreadySettledOrExists }
            if unknown { throw ExitCode.noSuchPromise }
        }

        /// `--prefix`: `forget` with `prefix` until its cursor is null; prints
        /// how many it forgot, and says on stderr how many it kept and why.
        private func forget(prefix: String, with client: BlockingPromiseClient) throws {
            var cursor: JSONValue = .null
            var forgotten = 0
            var pending = 0
            var needed = 0
            repeat {
                var params: [String: JSONValue] = ["prefix": .string(prefix)]
                if !cursor.isNull { params["cursor"] = cursor }
                let page = try client.call("forget", params)
                forgotten += page["forgotten"]?.intValue ?? 0
                pending += page["keptPending"]?.intValue ?? 0
                needed += page["keptNeeded"]?.intValue ?? 0
                cursor = page["cursor"] ?? .null
            } while !cursor.isNull
            Output.line(String(forgotten))
            guard pending + needed > 0 else { return }
            var kept: [String] = []
            if pending > 0 { kept.append("\(pending) pending") }
            if needed > 0 { kept.append("\(needed) needed by a pending promise (forget again once it has settled)") }
            Failure.report("kept \(kept.joined(separator: " and ")) under \(prefix)")
            throw ExitCode.alreadySettledOrExists
        }
    }
}
