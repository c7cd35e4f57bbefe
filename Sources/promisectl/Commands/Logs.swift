import ArgumentParser
import Foundation
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

extension PromiseCtl {
    struct Logs: ClientCommand {
        static let configuration = CommandConfiguration(
            commandName: "logs",
            abstract: "Print the output a step wrote: the end of its stdout and stderr.",
            discussion: """
                Prints what the daemon kept of a `then … exec` or `promisectl run` step's \
                output: the stdout part to stdout and the stderr part to stderr, as the \
                step wrote them (bytes that are not UTF-8 show as U+FFFD). The daemon keeps \
                the last 64 KiB of each stream (promised --max-log-bytes); when a stream \
                was longer, a note on stderr says how many bytes were cut from its front. \
                With --follow, output written from now on is printed as it comes, until \
                the step settles; an ID not created yet is waited for, as `wait` does \
                (so it may start before the step is declared), and --timeout gives up \
                after that many seconds (exit 3). Exits like \
                `get`: 0 when pending or fulfilled, 1 when rejected, 2 when cancelled \
                (with --follow: how the step ended); 4 when there is no such promise \
                (with --follow: only when it was created, settled and forgotten before \
                logs could look).

                Example:
                  promisectl logs test/lib
                  promisectl logs --follow build/app 2>&1 | tee build.log
                  promisectl logs --follow build/x & promisectl then src --id build/x -- make x
                  promisectl logs --follow test/slow --timeout 600
                """)

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The step's id.")
        var id: String

        @Flag(name: [.short, .long], help: "Keep printing new output until the step settles.")
        var follow = false

        @Option(help: ArgumentHelp("With --follow, give up after this many seconds (exit 3).", valueName: "sec"))
        var timeout: Double?

        func validate() throws {
            if let timeout, !(timeout >= 0) || !timeout.isFinite {
                throw ValidationError("--timeout must be a number of seconds, 0 or more")
            }
            if timeout != nil && !follow { throw ValidationError("--timeout needs --follow") }
        }

        func run(with client: PromiseClient) throws {
            let deadline = timeout.map { ContinuousClock.now + .milliseconds(Int64(($0 * 1000).rounded())) }
            let answer = follow ? try followedLog(client, until: deadline) : try client.call("logs", ["id": .string(id)])
            Self.print(answer, id: id)
            var state = answer["state"]?.stringValue ?? "pending"
            if follow && state == "pending" { state = try followUntilSettled(client, until: deadline) }
            let status = PromiseClient.Record.State(rawValue: state).map { ExitCode(state: $0) } ?? .success
            if status != .success { throw status }
        }

        /// How often a followed id that does not exist yet is asked for again, at first and at most.
        static let creationPoll = (first: Duration.milliseconds(20), longest: Duration.milliseconds(250))

        /// The answer to `logs` with `follow`, subscribed to `id` in the same
        /// line, so that the end cannot slip in between. An id not created yet
        /// is waited for, as `wait` does: the protocol tells of no creation,
        /// so `logs` is asked again until it finds the promise (the
        /// subscription, which may come before `create`, stays in place
        /// meanwhile). What the step wrote before is in that first answer.
        private func followedLog(_ client: PromiseClient, until deadline: ContinuousClock.Instant?) throws -> JSONValue {
            let follow: [String: JSONValue] = ["id": .string(id), "follow": true]
            let results = try client.batch([.init("subscribe", ["ids": [.string(id)]]), .init("logs", follow)], timeout: nil)
            _ = try results[0].get()
            var answer = try Self.existing(results[1].get)
            var delay = Self.creationPoll.first
            var settledMeanwhile = false
            while true {
                if let answer {
                    if settledMeanwhile && answer["state"]?.stringValue == "pending" {
                        // Settled, forgotten and made again between two looks: its one `settled` was used up.
                        try client.call("subscribe", ["ids": [.string(id)]])
                    }
                    return answer
                }
                // Not created yet: look again after a while, reading the subscription's news meanwhile.
                let wait = try deadline.map { min(delay, try timeLeft(before: $0)) } ?? delay
                if let notification = try client.nextNotification(timeout: wait),
                   notification.method == "settled", notification.params["id"]?.stringValue == id
                {
                    // Made and settled between two looks: one more look finds its log, unless it was forgotten too.
                    settledMeanwhile = true
                }
                delay = min(delay * 2, Self.creationPoll.longest)
                answer = settledMeanwhile ? try client.call("logs", follow) : try Self.existing { try client.call("logs", follow) }
            }
        }

        /// The answer `ask` gets, or nil when the promise does not exist (yet).
        private static func existing(_ ask: () throws -> JSONValue) throws -> JSONValue? {
            do {
                return try ask()
            } catch let error as RPCError where error.code == .noSuchPromise {
                return nil
            }
        }

        /// Prints `log` notifications until the `settled` one; returns the state it tells.
        private func followUntilSettled(_ client: PromiseClient, until deadline: ContinuousClock.Instant?) throws -> String {
            while true {
                let notification = try client.nextNotification(timeout: try deadline.map(timeLeft(before:)))
                guard let notification, notification.params["id"]?.stringValue == id else { continue }
                switch notification.method {
                case "log":
                    let text = notification.params["data"]?.stringValue ?? ""
                    Self.write(text, toStandardError: notification.params["stream"]?.stringValue == "stderr")
                case "settled":
                    return notification.params["state"]?.stringValue ?? "pending"
                default:
                    continue
                }
            }
        }

        /// What is left before `--timeout`'s deadline; exits 3 once nothing is.
        private func timeLeft(before deadline: ContinuousClock.Instant) throws -> Duration {
            let left = deadline - .now
            if left <= .zero {
                Failure.report("timed out following \(id)")
                throw ExitCode.timedOut
            }
            return left
        }

        /// The notes about cut streams, then the stdout part, then the stderr part.
        static func print(_ answer: JSONValue, id: String) {
            let limit = answer["limit"]?.intValue ?? 0
            for stream in ["stdout", "stderr"] {
                guard let dropped = answer[stream + "Dropped"]?.intValue, dropped > 0 else { continue }
                Failure.report("\(stream) of \(id): the first \(dropped) bytes were cut (the daemon keeps "
                               + "the last \(limit) bytes of each stream; promised --max-log-bytes sets it)")
            }
            write(answer["stdout"]?.stringValue ?? "", toStandardError: false)
            write(answer["stderr"]?.stringValue ?? "", toStandardError: true)
        }

        private static func write(_ text: String, toStandardError: Bool) {
            guard !text.isEmpty else { return }
            Output.write(text, to: toStandardError ? STDERR_FILENO : STDOUT_FILENO)
        }
    }
}
