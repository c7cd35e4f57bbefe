import ArgumentParser

/// A `then` or `run` line whose command was given without `--` before it.
///
/// ArgumentParser reads `promisectl then x --id t gcc -c x.c` as a stray
/// argument and an unknown option ("Unknown option '-c'"), which does not say
/// that the command goes after `--`. This finds the first word that `--`
/// before it makes the line parse, and shows the line so written.
enum MissingTerminator {
    /// Whether `arguments` are a `then` or `run` line without `--`: only those
    /// are parsed through ``run(_:)``, every other line goes to `main()` as is.
    static func mayApply(to arguments: [String]) -> Bool {
        guard let (index, _) = FastCommandLine.commandPosition(in: arguments) else { return false }
        return ["then", "run"].contains(arguments[index]) && !arguments.contains("--")
    }

    /// What `PromiseCtl.main()` does, with the message of ``message(for:error:)``
    /// (exit 64) in place of ArgumentParser's when it applies.
    static func run(_ arguments: [String]) -> Never {
        do {
            var command = try PromiseCtl.parseAsRoot(arguments)
            try command.run()
            PromiseCtl.exit()
        } catch {
            if let message = message(for: arguments, error: error) {
                Failure.report(message)
                PromiseCtl.exit(withError: ExitCode.usage)
            }
            PromiseCtl.exit(withError: error)
        }
    }

    /// ArgumentParser's message for `error`, then where the command goes, or nil
    /// when `--` before no word makes the line parse (the error is another one).
    static func message(for arguments: [String], error: any Error) -> String? {
        guard PromiseCtl.exitCode(for: error) == .validationFailure,
            let (index, _) = FastCommandLine.commandPosition(in: arguments)
        else { return nil }
        for start in (index + 2)..<max(index + 2, arguments.count) where !arguments[start].hasPrefix("-") {
            let fixed = Array(arguments[..<start]) + ["--"] + Array(arguments[start...])
            guard (try? PromiseCtl.parseAsRoot(fixed)) != nil else { continue }
            let said = PromiseCtl.message(for: error)
            return said + " (a command goes after --: promisectl " + Format.command(fixed, limit: .max) + ")"
        }
        return nil
    }
}
