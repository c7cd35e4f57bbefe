import ArgumentParser
import PromiseModel
import PromiseRPC

/// `promisectl`: the command-line client of the `promised` daemon. Its
/// entry point is ``PromiseCtlEntry``, which takes the command lines scripts
/// run in loops past ArgumentParser.
struct PromiseCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "promisectl",
        abstract: "Create, settle, chain and wait for promises held by the promised daemon.",
        discussion: """
            A promise is the eventual result of a task, named by an id that unrelated \
            scripts agree on. Values travel as JSON on stdin/stdout.

            The daemon is found through --socket (before or after the command), else \
            $PROMISED_SOCKET, else $XDG_RUNTIME_DIR/promised.sock, else a per-user \
            folder under the temp dir. --wait-daemon DURATION before the command waits \
            up to that long for the daemon to accept connections first (a daemon \
            just started listens once its store is loaded), else exits 69.

            Output for people (list's table, get's details, tree, watch's lines, wait's \
            progress bar) goes to terminals; piped or redirected, commands print what \
            scripts read. PROMISECTL_TTY=1 treats every stream as a terminal, \
            PROMISECTL_TTY=0 none.

            Exit statuses (every command; `run` exits with its command's own status \
            once that settled the promise):
              0  success / fulfilled     4  no such promise
              1  rejected                5  already settled or already exists
              2  cancelled               64 usage error
              3  timed out               69 daemon unreachable
                                         70 internal error
            `wait --cancel-on-signal` exits 130 on SIGINT and 143 on SIGTERM.

            Example:
              promisectl create build/lib --timeout 600
              promisectl run build/lib -- make lib &
              promisectl wait build/lib --timeout 900 && echo built
              promisectl --socket /tmp/p.sock forget build/lib
              promised & promisectl --wait-daemon 10s create build/lib
            """,
        version: PromiseProtocol.daemonVersion,
        // Each names itself (`commandName:`): else ArgumentParser derives every
        // name from `String(describing:)` of its type at each start, dynamic casts
        // that scan all the protocol conformances of the statically linked binary.
        subcommands: [
            Create.self, Resolve.self, Reject.self, Cancel.self, Get.self, Wait.self,
            Then.self, Run.self, Watch.self, List.self, Info.self, Progress.self,
            All.self, AnyOf.self, Race.self, AllSettled.self, Forget.self, Pool.self, Pools.self, Tree.self,
            Logs.self,
        ]
    )

    /// `--socket` given before the command. A command's own `ConnectionOptions`
    /// takes this value: argument-parser hands an option group its parent parsed
    /// to a child group of the same type (`--socket` after the command works too).
    @OptionGroup var connection: ConnectionOptions
}
