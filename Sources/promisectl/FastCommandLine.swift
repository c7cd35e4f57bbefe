import ArgumentParser
import PromiseModel
import PromiseRPC

/// The command lines that scripts run in loops (`get`, `create`, `resolve`,
/// `reject`, `run`, `then`, `wait`, `all`), parsed by hand into the same
/// plain values (``ClientCall``) ArgumentParser's commands hand over.
///
/// Why by hand: ArgumentParser finds a command's arguments by reflection at
/// every start (Mirror over each command and option group, conformance checks
/// that scan every protocol conformance of the statically linked binary, types
/// looked up by mangled name), which is most of a short call's start-up.
/// This parser builds plain values, without touching ArgumentParser's types
/// (docs/PERFORMANCE.md; and see the Makefile's metadata-accessor flag,
/// `CTL_LINK`).
///
/// It takes only what it fully understands: the command's own flags and
/// options (`--name value` or `--name=value`, each at most once, `--env`
/// repeatable), `--socket` before or after the command, the command's
/// positional arguments in the right number, and `--` before CMD for `run`
/// and `then`. Anything else (help, `--version`, unknown or short options, a
/// value that starts with `-`, an empty value, a number that does not parse,
/// a line that fails `validate()`) gives nil, and ArgumentParser parses the
/// line, with its own messages and exit statuses. What it takes
/// runs the same plain value's `validate()` and `run()` as the full path,
/// so the output and exit status are the same: the tests parse every form
/// both ways and compare the values (PromiseCtlFastPathTests).
enum FastCommandLine {
    /// The command `arguments` (without the program name) ask for, validated,
    /// or nil when ArgumentParser must parse them.
    static func parse(_ arguments: [String]) -> (any ClientCall)? {
        guard let (index, socket) = commandPosition(in: arguments), let kind = Kind(rawValue: arguments[index]) else {
            return nil
        }
        guard var scan = Scan(arguments[(index + 1)...], grammar: kind.grammar) else { return nil }
        if let before = socket {
            guard !scan.options.contains(where: { $0.name == "socket" }) else { return nil }
            scan.options.append((name: "socket", value: before))
        }
        guard let command = build(kind, from: &scan), scan.isFullyUsed else { return nil }
        return command
    }

    /// Where the command's name is in `arguments`, and the `--socket` given
    /// before it: nil when anything else comes first (help, `--version`, a
    /// second `--socket`) or no word follows, which ArgumentParser reads.
    static func commandPosition(in arguments: [String]) -> (index: Int, socket: String?)? {
        var socket: String?
        var index = 0
        while index < arguments.count, arguments[index].hasPrefix("-") {
            guard socket == nil, let (name, inline) = splitOption(arguments[index]), name == "socket",
                  let value = optionValue(inline, arguments, &index) else { return nil }
            socket = value
            index += 1
        }
        return index < arguments.count ? (index, socket) : nil
    }

    /// The commands taken here, by name.
    enum Kind: String {
        case get, create, resolve, reject, run, then, wait, all

        var grammar: Grammar {
            switch self {
            case .get: Grammar(flags: ["json", "human", "raw"])
            case .create: Grammar(flags: ["if-exists", "replace"], options: ["name", "timeout"])
            case .resolve: Grammar(flags: ["string"], dashValueAt: 1)
            case .reject: Grammar(options: ["code", "data"])
            case .run: Grammar(options: ["grace", "pool", "reconnect-timeout", "retry"], takesCommand: true)
            case .then:
                Grammar(flags: ["daemon-env", "replace"], options: ["id", "on", "cwd", "pool", "retry", "retry-delay"],
                        repeatable: ["env"], takesCommand: true)
            case .wait:
                Grammar(flags: ["json", "raw", "progress", "cancel-on-signal", "show-output"], options: ["timeout", "reconnect-timeout"])
            case .all: Grammar(flags: ["stop-on-failure", "replace"], options: ["id", "policy"])
            }
        }
    }

    /// What a command accepts after its name, besides `--socket`.
    struct Grammar {
        // Arrays, not sets: each generic type a start-up makes costs a lookup in the runtime's tables.
        var flags: [String] = []
        var options: [String] = []
        var repeatable: [String] = []
        /// The positional argument (by position) that may be `-` (stdin).
        var dashValueAt: Int?
        /// `--` ends the options; what follows is CMD.
        var takesCommand = false
    }

    /// A command line after the command's name, split by `Grammar`.
    struct Scan {
        var positionals: [String] = []
        var flags: [String] = []
        /// Each option given, in order. Not a dictionary: `[String: [String]]`
        /// made here has its generic type built at run time, with a scan of
        /// every conformance of the static binary (docs/PERFORMANCE.md).
        var options: [(name: String, value: String)] = []
        var command: [String] = []
        /// Names read by `build`, to check that nothing given went unused.
        private var used: [String] = []
        private var positionalsUsed = 0

        init?(_ arguments: ArraySlice<String>, grammar: Grammar) {
            let arguments = Array(arguments)
            var index = 0
            while index < arguments.count {
                let argument = arguments[index]
                if argument == "--" {
                    guard grammar.takesCommand else { return nil }
                    command = Array(arguments[(index + 1)...])
                    break
                }
                if argument == "-" && grammar.dashValueAt == positionals.count {
                    positionals.append(argument)
                } else if argument.hasPrefix("-") {
                    guard let (name, inline) = splitOption(argument) else { return nil }
                    if grammar.flags.contains(name) {
                        guard inline == nil, !flags.contains(name) else { return nil }
                        flags.append(name)
                    } else if name == "socket" || grammar.options.contains(name) || grammar.repeatable.contains(name) {
                        guard grammar.repeatable.contains(name) || !options.contains(where: { $0.name == name }),
                              let value = optionValue(inline, arguments, &index) else { return nil }
                        options.append((name: name, value: value))
                    } else {
                        return nil
                    }
                } else if argument.isEmpty {
                    return nil
                } else {
                    positionals.append(argument)
                }
                index += 1
            }
        }

        /// Whether every positional argument and option given was read.
        var isFullyUsed: Bool {
            positionalsUsed == positionals.count && options.allSatisfy { used.contains($0.name) } && flags.allSatisfy(used.contains)
        }

        mutating func flag(_ name: String) -> Bool {
            used.append(name)
            return flags.contains(name)
        }

        mutating func option(_ name: String) -> String? {
            used.append(name)
            return options.last { $0.name == name }?.value
        }

        mutating func repeated(_ name: String) -> [String] {
            used.append(name)
            return options.filter { $0.name == name }.map(\.value)
        }

        /// An option converted as ArgumentParser converts it; `.invalid` when it does not convert.
        mutating func option<Value: ExpressibleByArgument>(_ name: String, as type: Value.Type) -> Converted<Value> {
            guard let text = option(name) else { return .absent }
            return Value(argument: text).map { .value($0) } ?? .invalid
        }

        /// The positional arguments, when there are `range` of them.
        mutating func positionals(_ range: ClosedRange<Int>) -> [String]? {
            guard range.contains(positionals.count) else { return nil }
            positionalsUsed = positionals.count
            return positionals
        }

    }

    enum Converted<Value> {
        case absent, value(Value), invalid

        /// The value, nil when absent, or nil in `invalid` when it did not convert.
        func unwrap(_ invalid: inout Bool) -> Value? {
            switch self {
            case .absent: return nil
            case .value(let value): return value
            case .invalid:
                invalid = true
                return nil
            }
        }
    }

    /// `--name` or `--name=value` as (name, value); nil for anything else (`-x`, `---x`, `--`, `--=x`).
    static func splitOption(_ argument: String) -> (String, String?)? {
        guard argument.hasPrefix("--") else { return nil }
        let body = argument.dropFirst(2)
        let name = body.prefix { $0 != "=" }
        guard let first = name.first, first != "-" else { return nil }
        let inline = name.endIndex < body.endIndex ? String(body[body.index(after: name.endIndex)...]) : nil
        return (String(name), inline)
    }

    /// An option's value: the text after `=`, else the next argument (`index`
    /// moves past it). Nil when absent, empty or starting with `-`: there
    /// ArgumentParser's reading is the one that counts.
    static func optionValue(_ inline: String?, _ arguments: [String], _ index: inout Int) -> String? {
        let value: String
        if let inline {
            value = inline
        } else {
            guard index + 1 < arguments.count else { return nil }
            index += 1
            value = arguments[index]
        }
        return value.isEmpty || value.hasPrefix("-") ? nil : value
    }

    /// The command's plain value (see ``ClientCall``).
    private static func build(_ kind: Kind, from scan: inout Scan) -> (any ClientCall)? {
        var invalid = false
        let socket = scan.option("socket")
        let call: any ClientCall
        switch kind {
        case .get:
            guard let ids = scan.positionals(1...1) else { return nil }
            call = PromiseCtl.Get.Call(
                socket: socket, id: ids[0], json: scan.flag("json"), human: scan.flag("human"), raw: scan.flag("raw"))
        case .create:
            guard let ids = scan.positionals(0...1) else { return nil }
            call = PromiseCtl.Create.Call(
                socket: socket, id: ids.first, name: scan.option("name"),
                timeout: scan.option("timeout", as: CommandDuration.self).unwrap(&invalid)?.seconds, ifExists: scan.flag("if-exists"),
                replace: scan.flag("replace"))
        case .resolve:
            guard let values = scan.positionals(1...2) else { return nil }
            call = PromiseCtl.Resolve.Call(
                socket: socket, id: values[0], value: values.count > 1 ? values[1] : nil, string: scan.flag("string"))
        case .reject:
            guard let values = scan.positionals(1...2) else { return nil }
            call = PromiseCtl.Reject.Call(
                socket: socket, id: values[0], message: values.count > 1 ? values[1] : "rejected",
                code: scan.option("code", as: Int.self).unwrap(&invalid), data: scan.option("data"))
        case .run:
            guard let ids = scan.positionals(1...1) else { return nil }
            call = PromiseCtl.Run.Call(
                socket: socket, reconnect: reconnectTimeout(&scan, &invalid), id: ids[0],
                grace: scan.option("grace", as: CommandDuration.self).unwrap(&invalid)?.seconds ?? 2, pool: scan.option("pool"),
                command: scan.command, retry: scan.option("retry", as: Int.self).unwrap(&invalid) ?? 0)
        case .then:
            guard let ids = scan.positionals(1...1) else { return nil }
            call = PromiseCtl.Then.Call(
                socket: socket, id: ids[0], childID: scan.option("id"),
                on: scan.option("on", as: PromiseCtl.Then.Trigger.self).unwrap(&invalid) ?? .fulfilled,
                cwd: scan.option("cwd"), environment: scan.repeated("env"), pool: scan.option("pool"),
                daemonEnv: scan.flag("daemon-env"), command: scan.command, replace: scan.flag("replace"),
                retry: scan.option("retry", as: Int.self).unwrap(&invalid),
                retryDelay: scan.option("retry-delay", as: CommandDuration.self).unwrap(&invalid)?.seconds)
        case .wait:
            guard let ids = scan.positionals(1...1) else { return nil }
            call = PromiseCtl.Wait.Call(
                socket: socket, reconnect: reconnectTimeout(&scan, &invalid), id: ids[0],
                timeout: scan.option("timeout", as: CommandDuration.self).unwrap(&invalid)?.seconds, json: scan.flag("json"),
                raw: scan.flag("raw"), progress: scan.flag("progress"), cancelOnSignal: scan.flag("cancel-on-signal"),
                showOutput: scan.flag("show-output"))
        case .all:
            guard let ids = scan.positionals(0...Int.max) else { return nil }
            call = PromiseCtl.All.Call(
                socket: socket, inputs: CombinatorInputs(ids: ids, newID: scan.option("id"), replace: scan.flag("replace")),
                policy: scan.option("policy", as: PromiseCtl.All.Policy.self).unwrap(&invalid) ?? .failFast,
                stopOnFailure: scan.flag("stop-on-failure"))
        }
        // A line that fails what ArgumentParser checks after parsing goes to
        // ArgumentParser, which reports the failure with the command's usage.
        guard !invalid, (try? call.validate()) != nil else { return nil }
        return call
    }

    private static func reconnectTimeout(_ scan: inout Scan, _ invalid: inout Bool) -> ReconnectTimeout {
        var timeout = ReconnectTimeout()
        if let duration = scan.option("reconnect-timeout", as: CommandDuration.self).unwrap(&invalid) {
            timeout.seconds = duration.seconds
        }
        return timeout
    }
}
