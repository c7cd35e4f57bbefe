import ArgumentParser

#if canImport(Glibc)
import Glibc
#endif

/// promisectl's entry point: a command line ``FastCommandLine`` understands
/// runs without ArgumentParser's parse (most of a short call's start-up
/// cost, see there); any other goes to `PromiseCtl.main()`.
@main
enum PromiseCtlEntry {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        switch DaemonWait.take(from: &arguments) {
        case .invalid(let message)?:
            Failure.report(message)
            exit(ExitCode.usage.rawValue)
        case .wait(let seconds)?:
            do {
                try DaemonWait.wait(for: DaemonWait.socketPath(in: arguments), seconds: seconds)
            } catch {
                if let status = Failure.exitCode(reporting: error) as? ExitCode { exit(status.rawValue) }
                exit(ExitCode.internalError.rawValue)
            }
        case nil:
            break
        }
        guard let command = FastCommandLine.parse(arguments) else {
            if let message = UnknownCommand.message(for: arguments) {
                Failure.report(message)
                exit(ExitCode.usage.rawValue)
            }
            if MissingTerminator.mayApply(to: arguments) { MissingTerminator.run(arguments) }
            PromiseCtl.main(arguments)
            return
        }
        do {
            try command.run()
        } catch let status as ExitCode {
            // What `PromiseCtl.exit(withError:)` does for a status, without
            // the usage text it builds (by reflection) before finding it has
            // nothing to print.
            exit(status.rawValue)
        } catch {
            PromiseCtl.exit(withError: error)
        }
    }
}
