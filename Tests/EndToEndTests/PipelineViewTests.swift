import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Seeing a pipeline with the built promisectl: list's table, get's
/// details, tree and its DOT, watch's lines for people, wait's progress bar.
/// Output for terminals is forced with --human, or with PROMISECTL_TTY=1
/// where a command has no flag for it (wait --progress).
@Suite("promisectl: seeing a pipeline")
struct PipelineViewTests {
    /// Durations depend on the machine: `[1.2s]` becomes `[T]`.
    private static func withoutDurations(_ text: String) -> String {
        text.replacingOccurrences(of: #"\[[0-9.]+(ms|s)\]"#, with: "[T]", options: .regularExpression)
    }

    /// The cells of `id`'s row in list's table (columns are two or more spaces apart; empty cells vanish).
    private static func row(_ id: String, in table: String) -> [String]? {
        table.split(separator: "\n").map(String.init).first { $0.hasPrefix(id + " ") }.map { line in
            line.components(separatedBy: "  ").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
    }

    @Test("list --human shows a running step with its pid, then its exit status once it exited")
    func listShowsRunningThenExit() throws {
        try E2EDaemon.with { daemon in
            let go = daemon.directory + "/go"
            _ = try daemon.ctl("create", "p")
            _ = try daemon.ctl("then", "p", "--id", "p/step", "--", "sh", "-c", "while [ ! -e '\(go)' ]; do sleep 0.02; done; exit 3")
            _ = try daemon.ctl("resolve", "p", "1")
            var pid: Int?
            #expect(E2E.eventually {
                pid = (try? JSONValue(parsing: daemon.ctl("get", "p/step", "--json").stdout))?["pid"]?.intValue
                return pid != nil
            })
            let running = try daemon.ctl("list", "--prefix", "p/", "--human")
            #expect(running.status == 0, "\(running)")
            #expect(running.stdout.hasPrefix("ID      STATE    PID"), "\(running.stdout)")
            let runningRow = try #require(Self.row("p/step", in: running.stdout), "\(running.stdout)")
            #expect(runningRow.count == 5, "\(runningRow)")
            #expect(Array(runningRow.prefix(3)) == ["p/step", "running", String(try #require(pid))])
            #expect(E2E.isAlive(pid_t(try #require(pid))))

            #expect(FileManager.default.createFile(atPath: go, contents: nil))
            #expect(try daemon.ctl("wait", "p/step").status == 1)
            let exited = try daemon.ctl("list", "--prefix", "p/", "--human")
            let exitedRow = try #require(Self.row("p/step", in: exited.stdout), "\(exited.stdout)")
            #expect(exitedRow.count == 5, "\(exitedRow)")
            #expect(exitedRow[1] == "rejected")
            #expect(exitedRow.last == "3", "\(exitedRow)")
            // Without --human, a pipe keeps the script form.
            #expect(try daemon.ctl("list", "--prefix", "p/").stdout == "p/step\trejected\n")
        }
    }

    @Test("get --human shows the progress message under the summary; piped get prints the summary alone")
    func getShowsProgressMessage() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "build")
            _ = try daemon.ctl("progress", "build", "0.4", "compiled 120 of 300 files")
            let human = try daemon.ctl("get", "build", "--human")
            let lines = human.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "pending (40%)")
            #expect(lines.contains("  message   compiled 120 of 300 files"), "\(human)")
            #expect(try daemon.ctl("get", "build").stdout == "pending (40%)\n")
            #expect(try daemon.ctl("get", "build", "--human", "--json").status == 64)
        }
    }

    /// A pipeline of chain + all: p → a, b (exec steps), join = all(a, b), p → c → d (then chain), final after join.
    private static func makePipeline(_ daemon: E2EDaemon) throws {
        for arguments in [
            ["create", "p"],
            ["then", "p", "--id", "p/a", "--", "sh", "-c", "echo 1"],
            ["then", "p", "--id", "p/b", "--", "sh", "-c", "echo broken >&2; exit 2"],
            ["all", "p/a", "p/b", "--id", "p/join"],
            ["then", "p/join", "--id", "p/final", "--", "cat"],
            ["then", "p", "--id", "p/c"],
            ["then", "p/c", "--id", "p/d"],
        ] {
            let result = try daemon.ctl(arguments)
            try #require(result.status == 0, "\(arguments): \(result)")
        }
        _ = try daemon.ctl("resolve", "p", "\"go\"")
        #expect(try daemon.ctl("wait", "p/final").status == 1)
        #expect(try daemon.ctl("wait", "p/d").status == 0)
    }

    @Test("tree draws a pipeline of then-chains and an all, marking the failing step")
    func treeDrawing() throws {
        try E2EDaemon.with { daemon in
            try Self.makePipeline(daemon)
            let result = try daemon.ctl("tree", "p")
            #expect(result.status == 0, "\(result)")
            #expect(Self.withoutDurations(result.stdout) == """
                p  fulfilled  [T]
                ├── p/a  exec: sh -c 'echo 1'  fulfilled  [T]  exit 0
                │   └── p/join  all of 2  rejected: broken  [T]
                │       └── p/final  exec: cat  rejected: broken  [T]
                ├── p/b  exec: sh -c 'echo broken >&2; exit 2'  rejected: broken  [T]  exit 2  ← failed here  → p/join (above)
                └── p/c  then  fulfilled  [T]
                    └── p/d  then  fulfilled  [T]

                """)
            let ascii = try daemon.ctl("tree", "p/b", "--ascii")
            #expect(Self.withoutDurations(ascii.stdout) == """
                p/b  exec: sh -c 'echo broken >&2; exit 2'  rejected: broken  [T]  exit 2  <- failed here
                `-- p/join  all of 2  rejected: broken  [T]
                    `-- p/final  exec: cat  rejected: broken  [T]

                """)
            #expect(try daemon.ctl("tree", "nothing").status == 4)
        }
    }

    @Test("tree --dot writes the same graph for Graphviz")
    func treeDot() throws {
        try E2EDaemon.with { daemon in
            try Self.makePipeline(daemon)
            let result = try daemon.ctl("tree", "p", "--dot")
            #expect(result.status == 0, "\(result)")
            #expect(Self.withoutDurations(result.stdout).split(separator: "\n", omittingEmptySubsequences: false) == [
                #"digraph "p" {"#,
                #"  node [shape=box, style="rounded,filled", fontname="monospace"];"#,
                ##"  "p" [label="p\nfulfilled [T]", fillcolor="#d4f7d4"];"##,
                ##"  "p/a" [label="p/a\nexec: sh -c 'echo 1'\nfulfilled [T] exit 0", fillcolor="#d4f7d4"];"##,
                ##"  "p/b" [label="p/b\nexec: sh -c 'echo broken >&2; exit 2'\nrejected [T] exit 2", fillcolor="#f7d4d4", color="red", penwidth=3];"##,
                ##"  "p/c" [label="p/c\nthen\nfulfilled [T]", fillcolor="#d4f7d4"];"##,
                ##"  "p/join" [label="p/join\nall of 2\nrejected [T]", fillcolor="#f7d4d4"];"##,
                ##"  "p/d" [label="p/d\nthen\nfulfilled [T]", fillcolor="#d4f7d4"];"##,
                ##"  "p/final" [label="p/final\nexec: cat\nrejected [T]", fillcolor="#f7d4d4"];"##,
                #"  "p" -> "p/a";"#,
                #"  "p" -> "p/b";"#,
                #"  "p" -> "p/c";"#,
                #"  "p/a" -> "p/join" [style=dashed];"#,
                #"  "p/b" -> "p/join" [style=dashed];"#,
                #"  "p/c" -> "p/d";"#,
                #"  "p/join" -> "p/final";"#,
                "}",
                "",
            ])
        }
    }

    @Test("tree of 1,000 steps (a fan of 600 and a chain of 399) draws 1,000 promises; --max-nodes cuts it")
    func treeOfAThousandSteps() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client(timeout: .seconds(30))
            defer { client.close() }
            try client.call("create", ["id": "big"])
            let fan = (0..<600).map { BlockingPromiseClient.BatchEntry("then", ["id": "big", "childId": .string("big/f\($0)")]) }
            let chain = (0..<399).map { i in
                BlockingPromiseClient.BatchEntry("then", ["id": .string(i == 0 ? "big" : "big/c\(i - 1)"), "childId": .string("big/c\(i)")])
            }
            for entry in try client.batch(fan + chain, timeout: .seconds(30)) { _ = try entry.get() }
            try client.call("resolve", ["id": "big", "value": 1])

            let result = try daemon.ctl(["tree", "big"], timeout: .seconds(60))
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n")
            #expect(lines.count == 1_000)
            #expect(Set(lines.map { $0.split(separator: " ").first { !"│├└─".contains($0.first ?? " ") } ?? "" }).count == 1_000)
            #expect(lines.last?.hasSuffix("└── big/c398  then  fulfilled  [" + (lines.last?.split(separator: "[").last ?? "")) == true)

            let dot = try daemon.ctl(["tree", "big", "--dot"], timeout: .seconds(60))
            let dotLines = dot.stdout.split(separator: "\n")
            #expect(dotLines.filter { $0.contains(" [label=") }.count == 1_000)
            #expect(dotLines.filter { $0.contains(" -> ") }.count == 999)

            let cut = try daemon.ctl(["tree", "big", "--max-nodes", "120"], timeout: .seconds(60))
            let cutLines = cut.stdout.split(separator: "\n")
            #expect(cutLines.count == 121)
            #expect(cutLines.last == "… stopped at 120 promises (--max-nodes); more are under big")
        }
    }

    @Test("watch --human prints one line per event: time, id, progress or outcome")
    func watchHumanLines() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "a")
            _ = try daemon.ctl("create", "b")
            _ = try daemon.ctl("reject", "b", "disk full", "--code", "7")
            let watcher = try daemon.startCtl("watch", "a", "b", "--until-settled", "--human")
            #expect(E2E.eventually { watcher.stdoutSoFar.contains("  b  ") })
            _ = try daemon.ctl("progress", "a", "0.5", "halfway")
            _ = try daemon.ctl("resolve", "a", #"{"n":1}"#)
            let result = try watcher.finish(timeout: .seconds(10))
            #expect(result.status == 0, "\(result)")
            let lines = Self.withoutDurations(result.stdout).split(separator: "\n").map { String($0.dropFirst(8)) }
            #expect(lines == [
                "  b  rejected: disk full (code 7)  [T]",
                "  a  50%  halfway",
                #"  a  fulfilled  {"n":1}  [T]"#,
            ])
            #expect(result.stdout.split(separator: "\n").allSatisfy { $0.prefix(8).wholeMatch(of: /\d\d:\d\d:\d\d/) != nil })
        }
    }

    @Test("wait --progress draws a bar on stderr on a terminal, a line per change elsewhere; stdout keeps the value")
    func waitProgressBar() throws {
        try E2EDaemon.with { daemon in
            for (id, terminal) in [("job", "1"), ("log", "0")] {
                _ = try daemon.ctl("create", id)
                _ = try daemon.ctl("progress", id, "0.1", "starting")
                let waiter = try daemon.startCtl(["wait", id, "--progress"],
                                                 environment: ["PROMISECTL_TTY": terminal, "COLUMNS": "100"])
                #expect(E2E.eventually { waiter.stderrSoFar.contains("10%") }, "\(waiter.stderrSoFar)")
                _ = try daemon.ctl("progress", id, "0.5", "halfway")
                #expect(E2E.eventually { waiter.stderrSoFar.contains("50%") })
                _ = try daemon.ctl("resolve", id, "\"done\"")
                let result = try waiter.finish(timeout: .seconds(10))
                #expect(result.status == 0, "\(result)")
                #expect(result.stdout == "\"done\"\n")
                if terminal == "1" {
                    #expect(result.stderr == "\rjob [===>                          ]  10%  starting\u{1B}[K"
                        + "\rjob [===============>              ]  50%  halfway\u{1B}[K" + "\r\u{1B}[K")
                } else {
                    #expect(result.stderr == "log  10%  starting\nlog  50%  halfway\n")
                }
            }
        }
    }

    @Test("wait --progress on an all shows the progress of its inputs joined")
    func waitProgressOfAll() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "x")
            _ = try daemon.ctl("create", "y")
            _ = try daemon.ctl("all", "x", "y", "--id", "both")
            let waiter = try daemon.startCtl(["wait", "both", "--progress"], environment: ["PROMISECTL_TTY": "0"])
            _ = try daemon.ctl("progress", "x", "0.01")
            #expect(E2E.eventually { waiter.stderrSoFar.contains("both") }, "\(waiter.stderrSoFar)")
            _ = try daemon.ctl("resolve", "x", "1")
            #expect(E2E.eventually { waiter.stderrSoFar.contains("both  50%") }, "\(waiter.stderrSoFar)")
            _ = try daemon.ctl("resolve", "y", "2")
            let result = try waiter.finish(timeout: .seconds(10))
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "[1,2]\n")
        }
    }

    @Test("on a real terminal (a pty from script(1)) list prints the table and wait --progress the bar, without flags",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func realTerminal() throws {
        try E2EDaemon.with { daemon in
            _ = try daemon.ctl("create", "job")
            _ = try daemon.ctl("progress", "job", "0.3", "compiling")
            let ctl = E2EBinaries.promisectl + " --socket " + daemon.socketPath
            let listed = try E2ECommand.run("/usr/bin/script", ["-qec", ctl + " list", "/dev/null"], environment: ["COLUMNS": "80"])
            #expect(listed.stdout.replacingOccurrences(of: "\r\n", with: "\n").hasPrefix(
                "ID   STATE    PID  STARTED   DURATION  EXIT  PROGRESS\njob  pending"), "\(listed)")
            let waiter = try E2ECommand.start("/usr/bin/script", ["-qec", ctl + " wait job --progress", "/dev/null"], environment: ["COLUMNS": "80"])
            #expect(E2E.eventually { waiter.stdoutSoFar.contains("30%") }, "\(waiter.stdoutSoFar)")
            _ = try daemon.ctl("resolve", "job", "\"ok\"")
            let result = try waiter.finish(timeout: .seconds(10))
            #expect(result.stdout.hasPrefix("\rjob [=========>                    ]  30%  compiling\u{1B}[K\r\u{1B}[K\"ok\""), "\(result)")
        }
    }
}
