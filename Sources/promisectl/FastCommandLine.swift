import ArgumentParser
import PromiseRPC

/// The command lines that scripts run in loops (`get`, `create`, `resolve`,
/// `reject`, `run`, `then`, `wait`, `all`), parsed by hand into the same
/// command values ArgumentParser would make.
///
/// Why by hand: ArgumentParser finds a command's arguments by reflection at
/// every start (Mirror over each command and option group, conformance checks
/// that scan every protocol conformance of the statically linked binary, types
/// looked up by mangled name). Measured with callgrind on a fully static
/// release `promisectl get ID`: 15.0 M instructions, 85 % of them in
/// `parseAsRoot`; a static hello world costs 0.13 M. With this parser (and
/// the client's own start-up trimmed) it costs 1.5 M, and one call 1.26 ms
/// instead of 2.51 ms (redis-cli get: 2.69 ms; /bin/true: 0.49 ms). Most of
/// what is left here is making and dropping ArgumentParser's property
/// wrappers (each looks up conformances too): the price of running the very
/// command values the full path runs.
///
/// It takes only what it fully understands: the command's own flags and
/// options (`--name value` or `--name=value`, each at most once, `--env`
/// repeatable), `--socket` before or after the command, the command's
/// positional arguments in the right number, and `--` before CMD for `run`
/// and `then`. Anything else (help, `--version`, unknown or short options, a
/// value that starts with `-`, an empty value, a number that does not parse,
/// a line that fails `validate()`) gives nil, and ArgumentParser parses the
/// line as before, with its own messages and exit statuses. What it takes
/// runs the same command value's `validate()` and `run()`, so the output and
/// exit status are those of the full path: the tests parse every form both
/// ways and compare the values (PromiseCtlFastPathTests).
enum FastCommandLine {
    /// The command `arguments` (without the program name) ask for, validated,
    /// or nil when ArgumentParser must parse them.
    static func parse(_ arguments: [String]) -> (any ClientCommand)? {
        var socket: String?
        var index = 0
        // Before the command, only --socket.
        while index < arguments.count, arguments[index].hasPrefix("-") {
            guard socket == nil, let (name, inline) = splitOption(arguments[index]), name == "socket",
                  let value = optionValue(inline, arguments, &index) else { return nil }
            socket = value
            index += 1
        }
        guard index < arguments.count, let kind = Kind(rawValue: arguments[index]) else { return nil }
        guard var scan = Scan(arguments[(index + 1)...], grammar: kind.grammar) else { return nil }
        if let before = socket {
            guard scan.options["socket"] == nil else { return nil }
            scan.options["socket"] = [before]
        }
        guard let command = build(kind, from: &scan), scan.isFullyUsed else { return nil }
        return command
    }

    /// The commands taken here, by name.
    enum Kind: String {
        case get, create, resolve, reject, run, then, wait, all

        var grammar: Grammar {
            switch self {
            case .get: Grammar(flags: ["json", "human"])
            case .create: Grammar(flags: ["if-exists"], options: ["name", "timeout"])
            case .resolve: Grammar(flags: ["string"], dashValueAt: 1)
            case .reject: Grammar(options: ["code", "data"])
            case .run: Grammar(options: ["grace", "pool", "reconnect-timeout"], takesCommand: true)
            case .then:
                Grammar(flags: ["daemon-env"], options: ["id", "on", "cwd", "pool"], repeatable: ["env"], takesCommand: true)
            case .wait: Grammar(flags: ["json", "raw", "progress", "cancel-on-signal"], options: ["timeout", "reconnect-timeout"])
            case .all: Grammar(flags: ["stop-on-failure"], options: ["id", "policy"])
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
        var options: [String: [String]] = [:]
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
                        guard grammar.repeatable.contains(name) || options[name] == nil,
                              let value = optionValue(inline, arguments, &index) else { return nil }
                        options[name, default: []].append(value)
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
            positionalsUsed == positionals.count && (options.keys + flags).allSatisfy(used.contains)
        }

        mutating func flag(_ name: String) -> Bool {
            used.append(name)
            return flags.contains(name)
        }

        mutating func option(_ name: String) -> String? {
            used.append(name)
            return options[name]?.last
        }

        mutating func repeated(_ name: String) -> [String] {
            used.append(name)
            return options[name] ?? []
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

        mutating func connection() -> ConnectionOptions {
            var connection = ConnectionOptions()
            connection.socket = option("socket")
            return connection
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

    /// The command value, every property set (reading an unset one traps).
    private static func build(_ kind: Kind, from scan: inout Scan) -> (any ClientCommand)? {
        var invalid = false
        switch kind {
        case .get:
            guard let ids = scan.positionals(1...1) else { return nil }
            var command = PromiseCtl.Get()
            command.connection = scan.connection()
            command.id = ids[0]
            command.json = scan.flag("json")
            command.human = scan.flag("human")
            return validated(command)
        case .create:
            guard let ids = scan.positionals(0...1) else { return nil }
            var command = PromiseCtl.Create()
            command.connection = scan.connection()
            command.id = ids.first
            command.name = scan.option("name")
            command.timeout = scan.option("timeout", as: Double.self).unwrap(&invalid)
            command.ifExists = scan.flag("if-exists")
            return invalid ? nil : validated(command)
        case .resolve:
            guard let values = scan.positionals(1...2) else { return nil }
            var command = PromiseCtl.Resolve()
            command.connection = scan.connection()
            command.id = values[0]
            command.value = values.count > 1 ? values[1] : nil
            command.string = scan.flag("string")
            return validated(command)
        case .reject:
            guard let values = scan.positionals(1...2) else { return nil }
            var command = PromiseCtl.Reject()
            command.connection = scan.connection()
            command.id = values[0]
            command.message = values.count > 1 ? values[1] : "rejected"
            command.code = scan.option("code", as: Int.self).unwrap(&invalid)
            command.data = scan.option("data")
            return invalid ? nil : validated(command)
        case .run:
            guard let ids = scan.positionals(1...1) else { return nil }
            var command = PromiseCtl.Run()
            command.connection = scan.connection()
            command.reconnect = reconnectOptions(&scan, &invalid)
            command.id = ids[0]
            command.grace = scan.option("grace", as: Double.self).unwrap(&invalid) ?? 2
            command.pool = scan.option("pool")
            command.command = scan.command
            return invalid ? nil : validated(command, groups: [command.reconnect])
        case .then:
            guard let ids = scan.positionals(1...1) else { return nil }
            var command = PromiseCtl.Then()
            command.connection = scan.connection()
            command.id = ids[0]
            command.childID = scan.option("id")
            command.on = scan.option("on", as: PromiseCtl.Then.Trigger.self).unwrap(&invalid) ?? .fulfilled
            command.cwd = scan.option("cwd")
            command.environment = scan.repeated("env")
            command.pool = scan.option("pool")
            command.daemonEnv = scan.flag("daemon-env")
            command.command = scan.command
            return invalid ? nil : validated(command)
        case .wait:
            guard let ids = scan.positionals(1...1) else { return nil }
            var command = PromiseCtl.Wait()
            command.connection = scan.connection()
            command.reconnect = reconnectOptions(&scan, &invalid)
            command.id = ids[0]
            command.timeout = scan.option("timeout", as: Double.self).unwrap(&invalid)
            command.json = scan.flag("json")
            command.raw = scan.flag("raw")
            command.progress = scan.flag("progress")
            command.cancelOnSignal = scan.flag("cancel-on-signal")
            return invalid ? nil : validated(command, groups: [command.reconnect])
        case .all:
            guard let ids = scan.positionals(0...Int.max) else { return nil }
            var command = PromiseCtl.All()
            command.connection = scan.connection()
            var inputs = CombinatorOptions()
            inputs.ids = ids
            inputs.newID = scan.option("id")
            command.inputs = inputs
            command.policy = scan.option("policy", as: PromiseCtl.All.Policy.self).unwrap(&invalid) ?? .failFast
            command.stopOnFailure = scan.flag("stop-on-failure")
            return invalid ? nil : validated(command, groups: [inputs])
        }
    }

    /// `command` when it passes what ArgumentParser checks after parsing (its
    /// option groups' `validate()`, then its own), else nil: ArgumentParser
    /// then reports the failure, with the command's usage.
    /// (`validate()` is `mutating`; none of promisectl's changes anything, so
    /// the groups are checked on copies.)
    private static func validated(_ command: any ClientCommand, groups: [any ParsableArguments] = []) -> (any ClientCommand)? {
        var command = command
        do {
            for var group in [command.connection] + groups { try group.validate() }
            try command.validate()
            return command
        } catch {
            return nil
        }
    }

    private static func reconnectOptions(_ scan: inout Scan, _ invalid: inout Bool) -> ReconnectOptions {
        var options = ReconnectOptions()
        options.seconds = scan.option("reconnect-timeout", as: Double.self).unwrap(&invalid)
            ?? Double(ReconnectPolicy.defaultGiveUpAfter.components.seconds)
        return options
    }
}
