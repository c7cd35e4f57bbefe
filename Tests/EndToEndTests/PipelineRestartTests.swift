import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// README's C pipeline (compile each file, link, run the program) through a
/// restart of the daemon in the middle of its compiles: the build a user
/// waits on finishes as if nothing happened, and no compile runs twice.
@Suite("Pipelines across a restart of the daemon", .serialized)
struct PipelineRestartTests {
    /// The sources: `f1` … `f4`, each a function returning its number, and
    /// `main.c` checking their sum.
    private static let names = ["f1", "f2", "f3", "f4"]

    private static func writeSources(in folder: String) throws {
        for (number, name) in names.enumerated() {
            try "int \(name)(void) { return \(number + 1); }\n"
                .write(toFile: "\(folder)/\(name).c", atomically: true, encoding: .utf8)
        }
        let declarations = names.map { "int \($0)(void);" }.joined(separator: " ")
        let sum = names.map { "\($0)()" }.joined(separator: " + ")
        try """
            #include <stdio.h>
            \(declarations)
            int main(void) { int sum = \(sum); printf("sum %d\\n", sum); return sum == 10 ? 0 : 1; }

            """.write(toFile: "\(folder)/main.c", atomically: true, encoding: .utf8)
    }

    /// Declares README's pipeline: every compile is slow enough (1 s) for the
    /// daemon to be stopped while they run, and notes each run in `runs`.
    private static func declare(_ daemon: E2EDurableDaemon, folder: String) throws {
        func ctl(_ arguments: [String]) throws {
            let result = try daemon.ctl(arguments)
            try #require(result.status == 0, "promisectl \(arguments): \(result)")
        }
        try ctl(["create", "build/src"])
        for name in names + ["main"] {
            try ctl(["then", "build/src", "--id", "build/cc/\(name)", "--", "sh", "-c",
                     "echo $1 >> \"$0/runs\"; sleep 1; cc -c \"$0/$1.c\" -o \"$0/$1.o\"", folder, name])
        }
        try ctl(["all"] + (names + ["main"]).map { "build/cc/\($0)" } + ["--id", "build/objs", "--stop-on-failure"])
        try ctl(["then", "build/objs", "--id", "build/link", "--", "sh", "-c",
                 "cc \"$0\"/*.o -o \"$0/app\"", folder])
        try ctl(["then", "build/link", "--id", "build/test", "--", "\(folder)/app"])
    }

    private func runsOfEachCompile(_ folder: String) -> [String: Int] {
        E2E.lines(ofFile: folder + "/runs").reduce(into: [:]) { $0[$1, default: 0] += 1 }
    }

    @Test("README's C pipeline finishes when the daemon stops (kill -9, SIGTERM) while its compiles run, each compile run once",
          arguments: ["kill -9", "SIGTERM"])
    func pipelineSurvivesRestart(stop: String) throws {
        let daemon = try E2EDurableDaemon.started()
        defer { daemon.remove() }
        let folder = daemon.directory + "/src"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Self.writeSources(in: folder)
        try Self.declare(daemon, folder: folder)
        let waiter = try daemon.startCtl(["wait", "build/test", "--reconnect-timeout", "60"])
        #expect(try daemon.ctl(["resolve", "build/src", "true"]).status == 0)
        #expect(E2E.eventually(timeout: .seconds(20)) { runsOfEachCompile(folder).count == Self.names.count + 1 },
                "the compiles did not all start: \(runsOfEachCompile(folder))")

        if stop == "kill -9" {
            daemon.kill9()
        } else {
            #expect(daemon.terminate() == 0)
        }
        try daemon.start()

        let waited = try waiter.finish(timeout: .seconds(60))
        #expect(waited.status == 0, "\(waited)\n\(daemon.logTail())")
        #expect(waited.stdout == "\"sum 10\"\n", "\(waited)")
        #expect(runsOfEachCompile(folder) == Dictionary(uniqueKeysWithValues: (Self.names + ["main"]).map { ($0, 1) }))
        let record = try E2E.record(daemon.call("get", ["id": "build/cc/f1"]))
        #expect(record.state == .fulfilled, "\(record.json)")
        #expect(record.json["exitStatus"] == 0, "\(record.json)")
    }
}
