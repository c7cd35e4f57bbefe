import ArgumentParser
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

                Exit status: 0 when every ID was forgotten; 5 when one was kept (pending \
                or needed); else 4 when one has no promise.

                Example:
                  promisectl forget build/lib build/app
                  promisectl list --state fulfilled | cut -f1 | xargs promisectl forget
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The promises' ids.")
        var ids: [String]

        func validate() throws {
            if ids.isEmpty { throw ValidationError("forget needs at least one ID") }
        }

        /// Ids per batch: the daemon's default `maxBatchSize`.
        private static let batchSize = 1_000

        func run(with client: PromiseClient) throws {
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
    }
}
