import ArgumentParser
import PromiseClient
import PromiseModel
import PromiseRPC

extension PromiseCtl {
    struct Run: CallingCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run a command here and settle a promise from how it ends.",
            discussion: """
                Creates ID if it does not exist (an ID that is already settled is an \
                error, exit 5, and CMD does not run). CMD runs in a process group of its \
                own; its stdout and stderr pass through. Exit 0 fulfils ID with CMD's \
                stdout (as JSON if it parses, else as a string without its trailing \
                newline); stdout longer than the daemon's maxProcessOutputBytes (1 MiB \
                unless promised --max-process-output-bytes says otherwise), or too long \
                for one request (its maxLineBytes), rejects ID instead, code -32004, as \
                for a `then` step: write large output to a file and print its path. \
                Another status rejects ID with code = the status and message = \
                the end of stderr. If ID is cancelled meanwhile, the whole group gets \
                TERM, then KILL after --grace seconds. SIGINT, SIGTERM and SIGHUP sent to \
                promisectl are passed on to the group. If promisectl itself dies, ID is \
                rejected by the daemon (a lease, taken whether or not run created ID). If the \
                daemon goes away, CMD carries on and run reconnects (--reconnect-timeout) to \
                settle ID; when it cannot, it says so on stderr. Exits with CMD's own status \
                (128 + N when signal N ended it) when ID settled as that status says; \
                else, however CMD ended: 1 when ID was rejected although CMD exited 0 \
                (stdout too long), 2 when ID was cancelled and CMD still exited 0, 5 when \
                another client settled ID meanwhile, 69 when the daemon is gone and ID \
                could not be settled. CMD's output is also sent to the daemon as the \
                step's log: `promisectl logs ID` shows its end. --retry N runs a CMD \
                that fails (exits non-zero, or is killed) again, up to N more times, \
                saying so on stderr; ID settles from the last run.

                With --pool, CMD first waits for a slot of that pool of the daemon \
                (first come first served, with the daemon's own steps of that pool), \
                and gives it back when it ends, however it ends: the slot is held by \
                promisectl's connection, so a promisectl that is killed frees it too. \
                If ID is cancelled or settled while it waits, CMD does not run. The \
                slot, or the turn waited for, goes with the connection when the daemon \
                restarts; run asks again as it reconnects, taking a turn behind any \
                turn already waiting. A CMD already running runs on meanwhile (the pool \
                one over its limit until that turn comes, said on stderr).

                Example:
                  promisectl run build/lib -- make -C lib
                  promisectl run fetch/data -- sh -c 'curl -s https://example.com/data.json'
                  promisectl run --pool cc obj/b.o -- cc -c b.c
                  promisectl run --retry 2 fetch/data -- curl -fsS https://example.com/data.json
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var reconnect: ReconnectOptions

        @Argument(help: "The promise to settle.")
        var id: String

        @Option(help: ArgumentHelp("How long between TERM and KILL when ID is cancelled: a number of seconds, or with a unit: 90, 10s, 500ms, 2m, 1h.", valueName: "duration"))
        var grace = CommandDuration(seconds: 2)

        @Option(help: ArgumentHelp("Wait for a slot of this pool of the daemon before CMD starts.", valueName: "name"))
        var pool: String?

        @Option(help: ArgumentHelp("Run CMD again, up to n more times, while it fails (exits non-zero or is killed) (default 0).",
                                   valueName: "n"))
        var retry = 0

        @Argument(parsing: .postTerminator, help: "The command to run, after --.")
        var command: [String] = []

        var call: Call {
            Call(socket: connection.socket, reconnect: reconnect.timeout, id: id, grace: grace.seconds, pool: pool,
                 command: command, retry: retry)
        }

        /// The parsed line (see ``ClientCall``).
        struct Call: ClientCall {
            var socket: String?
            var reconnect = ReconnectTimeout()
            var id: String
            var grace: Double = 2
            var pool: String?
            var command: [String] = []
            var retry = 0

            func validate() throws {
                try reconnect.validate()
                if !(0...100).contains(retry) { throw ValidationError("--retry takes 0 to 100 more tries") }
                if command.isEmpty { throw ValidationError("run needs a command after --, e.g. promisectl run ID -- make") }
                if !(grace >= 0) || !grace.isFinite { throw ValidationError("--grace must be 0 or more seconds") }
                if let pool, !DaemonLimits.isValidPoolName(pool) {
                    throw ValidationError("a pool name is 1 to 64 letters, digits, ., _ or -, not \(pool)")
                }
            }

            func run(with client: BlockingPromiseClient) throws {
                if let pool { try PoolSlotClaim.checkExists(pool, on: client) }
                let session = RunSession(client: client, id: id, command: command, grace: .milliseconds(Int(grace * 1000)),
                                         pool: pool, reconnect: reconnect.policy, retries: retry)
                let status = try session.run()
                if status != 0 { throw ExitCode(status) }
            }
        }
    }
}
