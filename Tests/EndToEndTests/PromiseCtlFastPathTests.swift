import ArgumentParser
import Foundation
import Testing
@testable import promisectl

/// promisectl's hand parser (`FastCommandLine`) against ArgumentParser: every
/// line it takes gives the very plain value ArgumentParser's command hands over, and
/// every line it is not sure of goes to ArgumentParser.
@Suite("promisectl fast path")
struct PromiseCtlFastPathTests {
    /// Each command of the fast path with each of its options, in the forms it takes.
    static let takenLines: [[String]] = [
        ["get", "a"],
        ["get", "a", "--json"],
        ["--socket", "/tmp/x.sock", "get", "a", "--human"],
        ["get", "--socket=/tmp/x.sock", "build/lib"],
        ["get", "--raw", "release/version"],
        ["create"],
        ["create", "a", "--name", "library build", "--timeout", "600", "--if-exists"],
        ["create", "--timeout=0.5", "a", "--socket", "/tmp/x.sock"],
        ["create", "a", "--replace"],
        ["resolve", "a"],
        ["resolve", "a", #"{"artifact":"lib.a","ok":true}"#],
        ["resolve", "a", "-", "--string"],
        ["resolve", "--string", "a", "hello world"],
        ["--socket=/tmp/x.sock", "resolve", "a", "1"],
        ["reject", "a", "--socket", "/tmp/x.sock"],
        ["reject", "a"],
        ["reject", "a", "compiler crashed", "--code", "139", "--data", #"{"log":"build.log"}"#],
        ["run", "a", "--", "true"],
        ["run", "a", "--retry", "2", "--", "true"],
        ["run", "--grace", "0.5", "--pool", "cc", "a", "--reconnect-timeout", "0", "--", "cc", "-c", "--socket", "b.c"],
        ["--socket", "/tmp/x.sock", "run", "a", "--grace=0", "--", "sh", "-c", "exit 3"],
        ["then", "p"],
        ["then", "p", "--id", "c", "--socket", "/tmp/x.sock"],
        ["then", "p", "--id", "c", "--replace", "--", "cc", "-c", "a.c"],
        ["then", "p", "--id", "c", "--retry", "2", "--retry-delay", "500ms", "--", "cc", "-c", "a.c"],
        [
            "then", "p", "--id", "c", "--on", "settled", "--cwd", "sub", "--env", "A=1", "--env=B=2", "--pool", "cc",
            "--daemon-env", "--", "make", "--jobs", "--", "x",
        ],
        ["wait", "a"],
        ["wait", "a", "--timeout", "2.5", "--raw", "--progress", "--cancel-on-signal", "--reconnect-timeout=3"],
        ["wait", "--json", "a", "--socket", "/tmp/x.sock"],
        ["wait", "a", "--show-output"],
        ["all"],
        ["--socket", "/tmp/x.sock", "all", "a"],
        ["all", "a", "b", "--id", "j", "--replace"],
        ["all", "a", "b", "c", "--id", "j", "--policy", "nulls"],
        ["all", "a", "--stop-on-failure", "--policy=fail-fast"],
    ]

    @Test("each command and option the fast path takes gives the value ArgumentParser's command hands over", arguments: takenLines)
    func takenLinesParseAsArgumentParserParsesThem(arguments: [String]) throws {
        let fast = try #require(FastCommandLine.parse(arguments), "declined \(arguments)")
        let full = try #require(try PromiseCtl.parseAsRoot(arguments) as? any CallingCommand)
        // The reflection shows the type's full name and every stored property.
        #expect(String(reflecting: fast) == String(reflecting: full.call))
    }

    @Test("every option of the fast path's commands is covered by the lines above")
    func everyOptionIsCovered() {
        for command in [
            PromiseCtl.Get.self, PromiseCtl.Create.self, PromiseCtl.Resolve.self, PromiseCtl.Reject.self,
            PromiseCtl.Run.self, PromiseCtl.Then.self, PromiseCtl.Wait.self, PromiseCtl.All.self,
        ] as [any ParsableCommand.Type] {
            // ArgumentParser's own list of the command's options, from its help.
            let help = command.helpMessage(columns: 1000)
            let options = help.split(separator: "\n").compactMap { line -> String? in
                let trimmed = line.drop { $0 == " " }
                guard trimmed.hasPrefix("--") else { return nil }
                return String(trimmed.prefix { $0.isLetter || $0.isNumber || $0 == "-" })
            }
            #expect(!options.isEmpty)
            // The options given in the lines of this command, before a CMD's `--`.
            let name = command.configuration.commandName ?? ""
            let given = Set(Self.takenLines.filter { $0.contains(name) }.flatMap { line in
                line.prefix { $0 != "--" }.filter { $0.hasPrefix("--") }.map { String($0.prefix { $0 != "=" }) }
            })
            for option in options where option != "--help" && option != "--version" {
                #expect(given.contains(option), "\(name) \(option)")
            }
        }
    }

    @Test(
        "lines the fast path is not sure of go to ArgumentParser",
        arguments: [
            [], ["--help"], ["--version"], ["-h"], ["list"], ["cancel", "a"], ["get"], ["get", "a", "b"], ["get", "--help"],
            ["get", "a", "-h"], ["get", "a", "--bogus"], ["get", "a", "--json=1"], ["get", "a", "--json", "--json"],
            ["get", "--", "a"], ["get", ""], ["get", "-a"], ["get", "a", "--socket"], ["get", "a", "--socket="],
            ["get", "a", "--socket", "x", "--socket", "y"], ["--socket", "x", "get", "a", "--socket", "x"],
            ["--socket", "x"], ["--bogus", "get", "a"], ["create", "a", "b"], ["create", "--timeout", "-1"],
            ["create", "--timeout", "soon"], ["create", "--timeout", "0"], ["create", "--name", "--timeout", "1"],
            ["resolve"], ["resolve", "a", "b", "c"], ["resolve", "-", "1"], ["resolve", "a", "-5"],
            ["reject", "a", "--code", "1.5"], ["reject", "a", "--code", "-1"], ["run", "a"], ["run", "a", "--"],
            ["run", "--", "a", "true"], ["run", "a", "--grace", "-1", "--", "true"], ["run", "a", "--pool", "b/c", "--", "true"],
            ["run", "a", "--reconnect-timeout", "nan", "--", "true"], ["run", "a", "--retry", "101", "--", "true"], ["then", "p", "--env", "NOEQUALS", "--", "true"],
            ["then", "p", "--pool", "cc"], ["then", "p", "--retry", "2"], ["then", "p", "--retry", "x", "--", "true"],
            ["then", "p", "--on", "sometimes"], ["then", "p", "q"], ["then", "p", "--replace"],
            ["create", "a", "--replace", "--if-exists"], ["wait", "a", "--json", "--raw"],
            ["wait", "a", "--timeout", "inf"], ["all", "a", "--policy", "sometimes"],
            ["all", "a", "--policy", "nulls", "--stop-on-failure"], ["all", "a", "--replace"],
        ])
    func declinedLines(arguments: [String]) {
        #expect(FastCommandLine.parse(arguments) == nil)
    }

    @Test("get, wait and their failures print and exit the same through the fast path and through ArgumentParser")
    func readingCommandsAgree() throws {
        try E2EDaemon.with { daemon in
            #expect(try daemon.ctl("create", "v").status == 0)
            #expect(try daemon.ctl("resolve", "v", #""built""#).status == 0)
            #expect(try daemon.ctl("create", "r").status == 0)
            #expect(try daemon.ctl("reject", "r", "boom", "--code", "7").status == 0)
            #expect(try daemon.ctl("create", "p").status == 0)

            let cases: [(arguments: [String], status: Int32, fast: Bool)] = [
                (["get", "v"], 0, true),
                (["get", "v", "--json"], 0, true),
                (["get", "v", "--human"], 0, true),
                (["get", "r"], 1, true),
                (["get", "p"], 0, true),
                (["get", "missing"], 4, true),
                (["wait", "v", "--raw"], 0, true),
                (["wait", "r"], 1, true),
                (["wait", "p", "--timeout", "0.05"], 3, true),
                (["resolve", "missing", "1"], 4, true),
                (["resolve", "p", "not json"], 64, true),
                (["reject", "p", "x", "--data", "{bad"], 64, true),
                (["create", "v"], 5, true),
                (["create", "v", "--if-exists"], 0, true),
                (["reject", "v"], 5, true),
                (["run", "v", "--", "true"], 5, true),
                (["then", "missing", "--id", "c"], 4, true),
                (["all", "v", "missing"], 4, true),
                // Declined by the fast path: ArgumentParser's messages and statuses.
                (["get", "v", "--bogus"], 64, false),
                (["get", "--help"], 0, false),
                (["wait", "v", "--json", "--raw"], 64, false),
                (["run", "v"], 64, false),
                (["create", "--timeout", "0"], 64, false),
            ]
            for (arguments, status, fast) in cases {
                #expect((FastCommandLine.parse(arguments) != nil) == fast, "\(arguments)")
                let (taken, handedOn) = try Self.bothWays(daemon, arguments)
                #expect(taken.status == status, "\(arguments): \(taken)")
                #expect(taken.stdout == handedOn.stdout, "\(arguments)")
                #expect(taken.stderr == handedOn.stderr, "\(arguments)")
                #expect(taken.status == handedOn.status, "\(arguments)")
            }
        }
    }

    @Test("commands that change promises print and exit the same through the fast path and through ArgumentParser")
    func changingCommandsAgree() throws {
        try E2EDaemon.with { daemon in
            #expect(try daemon.ctl("create", "v").status == 0)
            #expect(try daemon.ctl("resolve", "v", "1").status == 0)
            // NEW is a fresh id for each way; the outputs are compared with it put back.
            let cases: [(setUp: [String]?, arguments: [String], stdin: String?, status: Int32)] = [
                // Its own timeout settles it soon, for the wait below.
                (nil, ["create", "NEW", "--name", "n", "--timeout", "0.3"], nil, 0),
                (["create", "NEW"], ["resolve", "NEW", #"{"a":[1,2]}"#], nil, 0),
                (["create", "NEW"], ["resolve", "NEW", "-", "--string"], "text\n", 0),
                (["create", "NEW"], ["reject", "NEW", "why", "--code", "3"], nil, 0),
                (nil, ["run", "NEW", "--", "sh", "-c", "echo out; echo err >&2; exit 3"], nil, 3),
                (nil, ["run", "NEW", "--grace", "1", "--", "echo", "--json"], nil, 0),
                (nil, ["then", "v", "--id", "NEW", "--", "sh", "-c", "echo 2"], nil, 0),
                (nil, ["all", "v", "v", "--id", "NEW", "--policy", "nulls"], nil, 0),
            ]
            for (setUp, arguments, stdin, status) in cases {
                #expect(FastCommandLine.parse(arguments) != nil, "\(arguments)")
                let (taken, handedOn) = try Self.bothWays(daemon, arguments, stdin: stdin, setUp: setUp)
                #expect(taken.status == status, "\(arguments): \(taken)")
                #expect(taken.stdout == handedOn.stdout, "\(arguments)")
                #expect(taken.stderr == handedOn.stderr, "\(arguments)")
                #expect(taken.status == handedOn.status, "\(arguments)")
                // And what they left behind is the same.
                let records = try [taken.id, handedOn.id].map { id in
                    try daemon.ctl("wait", id, "--timeout", "10", "--json").stdout.replacingOccurrences(of: id, with: "NEW")
                }
                #expect(Self.withoutTimes(records[0]) == Self.withoutTimes(records[1]), "\(arguments)")
            }
        }
    }

    /// What one way of running a command did, with the id NEW stood for.
    struct Outcome {
        var id: String
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `arguments` as given (the fast path's form, the socket from the
    /// environment) and with `--socket` given twice, which the fast path
    /// hands on to ArgumentParser (which takes the last one). NEW in the
    /// arguments becomes a fresh id for each, and back to NEW in the outputs.
    static func bothWays(
        _ daemon: E2EDaemon, _ arguments: [String], stdin: String? = nil, setUp: [String]? = nil
    ) throws -> (taken: Outcome, handedOn: Outcome) {
        let socket = ["--socket", daemon.socketPath]
        var handedOn = arguments
        handedOn.insert(contentsOf: socket, at: arguments.firstIndex(of: "--") ?? arguments.count)
        handedOn = socket + handedOn
        #expect(FastCommandLine.parse(handedOn) == nil, "\(handedOn)")
        let outcomes = try [arguments, handedOn].map { form -> Outcome in
            let id = E2E.uniqueID("fast")
            let fill = { (line: [String]) in line.map { $0.replacingOccurrences(of: "NEW", with: id) } }
            if let setUp { #expect(try daemon.ctl(fill(setUp)).status == 0) }
            let result = try daemon.ctl(fill(form), stdin: stdin)
            return Outcome(
                id: id, status: result.status, stdout: result.stdout.replacingOccurrences(of: id, with: "NEW"),
                stderr: result.stderr.replacingOccurrences(of: id, with: "NEW"))
        }
        return (outcomes[0], outcomes[1])
    }

    /// A record's JSON without the fields that hold times and process ids, which differ between two runs.
    static func withoutTimes(_ json: String) -> String {
        json.replacing(/"(created|settled|started|ended|deadline|pid)":[0-9]+,?/, with: "")
    }
}
