import ArgumentParser
import PromiseClient
import PromiseModel
import PromiseRPC

/// One command line of the commands scripts run in loops (`get`, `create`,
/// `resolve`, `reject`, `run`, `then`, `wait`, `all`), parsed, as a plain
/// value; and what the command does with it.
///
/// Why apart from the command's `ParsableCommand`: a value of that type holds
/// ArgumentParser's property wrappers (`Option<String>`, `Flag<Bool>`, …),
/// and making, reading or dropping one instantiates their generic types at
/// run time, each checking its requirements with a scan of every protocol
/// conformance of the statically linked binary, which touches the pages of
/// the whole conformance section (docs/PERFORMANCE.md). ``FastCommandLine``
/// builds these values without touching ArgumentParser; ArgumentParser's
/// path builds the same value from the command (``CallingCommand``), so both
/// run the same code.
protocol ClientCall {
    /// `--socket`, before or after the command; nil when not given.
    var socket: String? { get }
    /// What ArgumentParser checks after parsing; throws `ValidationError`.
    func validate() throws
    func run(with client: BlockingPromiseClient) throws
}

extension ClientCall {
    func validate() throws {}

    func run() throws {
        try withDaemon(socket: socket, run(with:))
    }
}

/// A command whose work is a ``ClientCall``: ArgumentParser's face of it
/// (help, completions, its messages for lines the fast path declines).
protocol CallingCommand: ParsableCommand {
    associatedtype Call: ClientCall
    /// The parsed line as the plain value both parsers make.
    var call: Call { get }
}

extension CallingCommand {
    func validate() throws { try call.validate() }
    func run() throws { try call.run() }
}
