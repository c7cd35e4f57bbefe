import PromiseClient
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// `promisectl --wait-daemon DURATION COMMAND …`: wait until the daemon
/// accepts connections before running the command, for scripts that start
/// `promised &` and use it at once (it listens only once its store is
/// loaded). Taken off the command line before either parser sees it; only
/// before the command's name, as a global option.
enum DaemonWait {
    /// How often a socket that does not accept yet is tried again, in microseconds.
    static let retryMicroseconds: useconds_t = 50_000

    /// What `--wait-daemon` before the command asked for, removed from `arguments`.
    enum Request {
        case wait(seconds: Double)
        case invalid(String)
    }

    /// Removes `--wait-daemon D` (or `--wait-daemon=D`) found before the
    /// command's name; nil when there is none.
    static func take(from arguments: inout [String]) -> Request? {
        var index = 0
        while index < arguments.count, arguments[index].hasPrefix("-") {
            let argument = arguments[index]
            if argument == "--wait-daemon" || argument.hasPrefix("--wait-daemon=") {
                let inline = argument.hasPrefix("--wait-daemon=") ? String(argument.dropFirst("--wait-daemon=".count)) : nil
                guard let text = inline ?? (index + 1 < arguments.count ? arguments[index + 1] : nil) else {
                    return .invalid("--wait-daemon needs a duration, e.g. --wait-daemon 10s")
                }
                arguments.removeSubrange(index..<(index + (inline == nil ? 2 : 1)))
                guard let duration = CommandDuration(argument: text), duration.seconds >= 0, duration.seconds.isFinite else {
                    return .invalid("--wait-daemon takes a duration (seconds, or 500ms, 10s, 2m), not \(text)")
                }
                return .wait(seconds: duration.seconds)
            }
            // `--socket P` before the command: skip its value too.
            index += argument == "--socket" ? 2 : 1
        }
        return nil
    }

    /// The socket `arguments` name (`--socket`, before or after the command),
    /// else the default one.
    static func socketPath(in arguments: [String]) -> String {
        var explicit: String?
        var index = 0
        while index < arguments.count, arguments[index] != "--" {
            if arguments[index] == "--socket", index + 1 < arguments.count {
                explicit = arguments[index + 1]
                index += 1
            } else if arguments[index].hasPrefix("--socket=") {
                explicit = String(arguments[index].dropFirst("--socket=".count))
            }
            index += 1
        }
        return SocketPath.resolve(explicit: explicit)
    }

    /// Connects to `socketPath` every 50 ms until it accepts, at most
    /// `seconds`. Throws the last failure when it never did, and at once a
    /// failure that waiting cannot mend (another user's daemon).
    static func wait(for socketPath: String, seconds: Double) throws {
        let deadline = ContinuousClock.now + .milliseconds(Int64((seconds * 1000).rounded()))
        while true {
            do {
                let client = try BlockingPromiseClient(socketPath: socketPath, timeout: .seconds(5))
                client.close()
                return
            } catch let error as PromiseClientError where error.code == .daemonUnreachable {
                guard ContinuousClock.now + .microseconds(retryMicroseconds) <= deadline else {
                    throw PromiseClientError(
                        .daemonUnreachable,
                        "no daemon answered at \(socketPath) within --wait-daemon \(CommandDuration(seconds: seconds).defaultValueDescription): "
                            + error.message)
                }
                usleep(retryMicroseconds)
            }
        }
    }
}
