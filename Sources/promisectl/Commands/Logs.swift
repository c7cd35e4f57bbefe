import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

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
                after that many seconds (exit 3). When the daemon goes away meanwhile \
                (a restart of a durable daemon), --follow connects again, as `watch` \
                does (--reconnect-timeout), asks for the log again and prints only what \
                it had not printed yet; bytes the daemon no longer has get a note on \
                stderr. Exits like \
                `get`: 0 when pending or fulfilled, 1 when rejected, 2 when cancelled \
                (with --follow: how the step ended); 4 when there is no such promise \
                (with --follow: only when it was created, settled and forgotten before \
                logs could look).

                With --prefix P, the output of every step whose id starts with P, in the \
                order they were made, each line led by its step's id ("build/cc/a: a.c:3: \
                warning: …"), stdout lines on stdout and stderr lines on stderr, as make \
                -j interleaves its jobs: the warnings of steps that succeeded. Exits 0.

                Example:
                  promisectl logs test/lib
                  promisectl logs --follow build/app 2>&1 | tee build.log
                  promisectl logs --follow build/x & promisectl then src --id build/x -- make x
                  promisectl logs --follow test/slow --timeout 600
                  promisectl logs --prefix build/ 2>&1 >/dev/null | grep warning
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var reconnect: ReconnectOptions

        @Argument(help: "The step's id.", completion: PromiseIDCompletion.kind)
        var id: String?

        @Option(help: ArgumentHelp("Print the output of every step whose id starts with this, each line led by its id.",
                                   valueName: "prefix"))
        var prefix: String?

        @Flag(name: [.short, .long], help: "Keep printing new output until the step settles.")
        var follow = false

        @Option(help: ArgumentHelp("With --follow, give up after this long (exit 3): a number of seconds, or with a unit: 90, 10s, 500ms, 2m, 1h.", valueName: "duration"))
        var timeout: CommandDuration?

        /// The one step's id (validate() made sure there is one without --prefix).
        private var stepID: String { id ?? "" }

        func validate() throws {
            if prefix != nil {
                if id != nil { throw ValidationError("logs takes an ID or --prefix, not both") }
                if follow { throw ValidationError("--follow follows one ID; --prefix prints what the steps kept") }
            } else if id == nil {
                throw ValidationError("logs needs an ID, or --prefix")
            }
            if let timeout = timeout?.seconds, !(timeout >= 0) || !timeout.isFinite {
                throw ValidationError("--timeout must be a number of seconds, 0 or more")
            }
            if timeout != nil && !follow { throw ValidationError("--timeout needs --follow") }
            // Only a follower reconnects: a plain `logs` asks once.
            if reconnect.seconds != nil && !follow { throw ValidationError("--reconnect-timeout needs --follow") }
        }

        func run(with client: BlockingPromiseClient) throws {
            if let prefix { return try PrefixedLogs.printAll(under: prefix, with: client) }
            let id = stepID
            var log = FollowedLog(id: id)
            let state: String
            if follow {
                let deadline = timeout.map { ContinuousClock.now + .milliseconds(Int64(($0.seconds * 1000).rounded())) }
                state = try followAcrossRestarts(reconnect.timeout.reconnecting(client), &log, until: deadline)
            } else {
                let answer = try client.call("logs", ["id": .string(id)])
                log.print(answer)
                state = answer["state"]?.stringValue ?? "pending"
            }
            let status = BlockingPromiseClient.Record.State(rawValue: state).map { ExitCode(state: $0) } ?? .success
            if status != .success { throw status }
        }

        /// Follows the log to the step's end; returns the state it ended in.
        /// A lost connection is made again (as `--reconnect-timeout` says) and
        /// the log asked for again: `log` prints what it had not printed yet.
        private func followAcrossRestarts(
            _ connection: ReconnectingPromiseClient, _ log: inout FollowedLog, until deadline: ContinuousClock.Instant?
        ) throws -> String {
            while true {
                do {
                    // Once found, a promise missing after a restart is gone (an in-memory daemon): -32001, exit 4.
                    let answer = try followedLog(connection.client, waitingForCreation: !log.started, until: deadline)
                    log.print(answer)
                    let state = answer["state"]?.stringValue ?? "pending"
                    return state == "pending" ? try followUntilSettled(connection.client, &log, until: deadline) : state
                } catch where ReconnectingPromiseClient.isConnectionLoss(error) && connection.policy.reconnects {
                    connection.markDisconnected(error)
                    try reconnect(connection, until: deadline)
                }
            }
        }

        /// Connects again; `--timeout`'s deadline passing first exits 3, the
        /// daemon not back within `--reconnect-timeout` exits 69.
        private func reconnect(_ connection: ReconnectingPromiseClient, until deadline: ContinuousClock.Instant?) throws {
            let givingUp = connection.policy.giveUpAfter.flatMap { limit in connection.disconnectedSince.map { $0 + limit } }
            do {
                try connection.reconnect(until: deadline)
            } catch let error as PromiseClientError where error.code == .daemonUnreachable {
                guard let deadline, givingUp.map({ deadline < $0 }) ?? true else { throw error }
                throw timedOut()
            }
        }

        /// How often a followed id that does not exist yet is asked for again, at first and at most.
        static let creationPoll = (first: Duration.milliseconds(20), longest: Duration.milliseconds(250))

        /// The answer to `logs` with `follow`, subscribed to `id` in the same
        /// line, so that the end cannot slip in between. An id not created yet
        /// is waited for, as `wait` does: the protocol tells of no creation,
        /// so `logs` is asked again until it finds the promise (the
        /// subscription, which may come before `create`, stays in place
        /// meanwhile). What the step wrote before is in that first answer.
        private func followedLog(
            _ client: BlockingPromiseClient, waitingForCreation: Bool, until deadline: ContinuousClock.Instant?
        ) throws -> JSONValue {
            let follow: [String: JSONValue] = ["id": .string(stepID), "follow": true]
            let results = try client.batch([.init("subscribe", ["ids": [.string(stepID)]]), .init("logs", follow)], timeout: nil)
            _ = try results[0].get()
            var answer = try waitingForCreation ? Self.existing(results[1].get) : .some(results[1].get())
            var delay = Self.creationPoll.first
            var settledMeanwhile = false
            while true {
                if let answer {
                    if settledMeanwhile && answer["state"]?.stringValue == "pending" {
                        // Settled, forgotten and made again between two looks: its one `settled` was used up.
                        try client.call("subscribe", ["ids": [.string(stepID)]])
                    }
                    return answer
                }
                // Not created yet: look again after a while, reading the subscription's news meanwhile.
                let wait = try deadline.map { min(delay, try timeLeft(before: $0)) } ?? delay
                if let notification = try client.nextNotification(timeout: wait),
                   notification.method == "settled", notification.params["id"]?.stringValue == stepID
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
        private func followUntilSettled(
            _ client: BlockingPromiseClient, _ log: inout FollowedLog, until deadline: ContinuousClock.Instant?
        ) throws -> String {
            while true {
                let notification = try client.nextNotification(timeout: try deadline.map(timeLeft(before:)))
                guard let notification, notification.params["id"]?.stringValue == stepID else { continue }
                switch notification.method {
                case "log":
                    log.print(notification: notification.params)
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
            if left <= .zero { throw timedOut() }
            return left
        }

        private func timedOut() -> ExitCode {
            Failure.report("timed out following \(stepID)")
            return .timedOut
        }
    }
}
