import ArgumentParser
import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// A subcommand that talks to the daemon. `run()` connects, runs the command
/// and turns every failure into one line on stderr and its pinned exit status.
protocol ClientCommand: ParsableCommand {
    var connection: ConnectionOptions { get }
    func run(with client: BlockingPromiseClient) throws
}

extension ClientCommand {
    func run() throws {
        try withDaemon(socket: connection.socket, run(with:))
    }
}

/// Connects to the daemon (`--socket`, else the default path), runs `body`
/// with the connection, and turns every failure into one line on stderr and
/// its pinned exit status.
func withDaemon(socket: String?, _ body: (BlockingPromiseClient) throws -> Void) throws {
    do {
        let client = try BlockingPromiseClient(socketPath: SocketPath.resolve(explicit: socket), timeout: nil)
        defer { client.close() }
        try body(client)
    } catch {
        throw Failure.exitCode(reporting: error)
    }
}

/// How failures reach the user: one line on stderr, then a pinned exit status.
enum Failure {
    /// Prints `error` as one line on stderr and returns the status to exit with.
    /// Statuses and argument-parser's own errors pass through untouched.
    static func exitCode(reporting error: any Error) -> any Error {
        switch error {
        case let code as ExitCode:
            return code
        case is ValidationError, is CleanExit:
            return error
        case let rpc as RPCError:
            report(describe(rpc))
            return ExitCode(rpcError: rpc)
        case let client as PromiseClientError:
            report(client.message)
            return ExitCode(clientError: client)
        case let usage as UsageError:
            report(usage.message)
            return ExitCode.usage
        default:
            report("\(error)")
            return ExitCode.internalError
        }
    }

    /// The daemon's message in promisectl's terms: a way out for a limit, the
    /// promisectl command for a protocol method, and the JSON-RPC code only for
    /// an error promisectl does not know.
    static func describe(_ error: RPCError) -> String {
        switch error.code {
        case .noSuchPromise, .alreadySettled, .alreadyExists, .waitTimedOut:
            return error.message
        case .invalidParams:
            if error.data?["param"]?.stringValue == "pool", let pool = error.data?["pool"]?.stringValue {
                return "no pool named \"\(pool)\": start promised with --pool \(pool)=N, or make it with promisectl pool \(pool) N"
            }
            return error.message
        case .limitExceeded:
            switch error.data?["limit"]?.stringValue {
            case "maxLineBytes", "maxValueBytes":
                return error.message + "; keep big values in a file and pass its path"
            case "maxPromises":
                return error.message + "; drop settled ones with promisectl forget ID… or forget --prefix P"
            case "maxConnections":
                return error.message + "; try again when other clients have closed"
            default:
                return error.message
            }
        default:
            return "\(error.message) (error \(error.code.rawValue))"
        }
    }

    /// Writes `promisectl: <message>` and a newline to stderr.
    static func report(_ message: String) {
        let line = "promisectl: " + message.replacingOccurrences(of: "\n", with: " ") + "\n"
        Output.write(line, to: STDERR_FILENO)
    }
}

/// A wrong command line found only while running (e.g. a VALUE that is not JSON): exits 64.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
