import Foundation
import Glibc
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// How the daemon starts a `then … exec` command (posix_spawn since issues
/// 20 and 22): what the command finds when it starts, and what the child
/// promise says when it cannot start.
@Suite("how exec steps are started")
struct ExecStartTests {
    /// Runs `argv` as a step of a fulfilled parent and returns the child's record.
    private func step(
        _ daemon: E2EDaemon, _ argv: [String], cwd: String? = nil, env: [String: String] = [:]
    ) throws -> BlockingPromiseClient.Record {
        let client = try daemon.client()
        defer { client.close() }
        let parent = E2E.uniqueID("parent")
        let child = E2E.uniqueID("child")
        try client.call("create", ["id": .string(parent)])
        try client.call("resolve", ["id": .string(parent), "value": 1])
        var params: [String: JSONValue] = [
            "id": .string(parent), "childId": .string(child), "exec": .array(argv.map { .string($0) }),
        ]
        if let cwd { params["cwd"] = .string(cwd) }
        if !env.isEmpty { params["env"] = .object(env.mapValues { .string($0) }) }
        try client.call("then", params)
        return try E2E.record(client.call("wait", ["id": .string(child), "timeoutMs": 10_000]))
    }

    @Test("a step starts with every signal at its default and none blocked, though the daemon ignores SIGPIPE and blocks SIGTERM")
    func defaultSignalsInTheChild() throws {
        try E2EDaemon.with { daemon in
            let record = try step(daemon, ["grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"])
            #expect(record.state == .fulfilled)
            let lines = try #require(record.value?.stringValue).split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.first == "SigBlk:\t0000000000000000")
            let ignored = try #require(UInt64(lines.last?.split(separator: "\t").last ?? "", radix: 16))
            // glibc's posix_spawn always leaves its two internal signals (32
            // and 33, below SIGRTMIN: no program can use them through glibc)
            // ignored in the child; every other one is at its default.
            let internalSignals: UInt64 = 1 << (32 - 1) | 1 << (33 - 1)
            #expect(ignored & ~internalSignals == 0, "SigIgn \(String(ignored, radix: 16))")
        }
    }

    @Test("a step that sends itself SIGPIPE dies of it: rejected with status 141 and signal 13")
    func sigpipeKillsTheStep() throws {
        try E2EDaemon.with { daemon in
            let record = try step(daemon, ["sh", "-c", "kill -PIPE $$; echo survived"])
            #expect(record.state == .rejected)
            #expect(record.reasonCode == 128 + Int(SIGPIPE))
            #expect(record.reason?["data"]?["signal"]?.intValue == Int(SIGPIPE))
            #expect(record.reason?["data"]?["exitStatus"]?.intValue == 128 + Int(SIGPIPE))
        }
    }

    @Test("a step leads its own session and process group")
    func stepLeadsItsGroup() throws {
        try E2EDaemon.with { daemon in
            let record = try step(daemon, ["cat", "/proc/self/stat"])
            let stat = try #require(record.value?.stringValue)
            // pid (comm) state ppid pgrp session …
            let pid = try #require(stat.split(separator: " ").first.map { String($0) })
            let after = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...]
                .split(separator: " ").map(String.init)
            #expect(after[2] == pid, "pgrp \(after[2]) of pid \(pid)")
            #expect(after[3] == pid, "session \(after[3]) of pid \(pid)")
        }
    }

    @Test("a program that does not exist is refused with status 127 and the reason it always had")
    func missingProgramReason() throws {
        try E2EDaemon.with { daemon in
            let absolute = try step(daemon, ["/nonexistent/program"])
            #expect(absolute.state == .rejected)
            #expect(absolute.reasonCode == 127)
            #expect(absolute.reasonMessage == "cannot run /nonexistent/program: uv_spawn: no such file or directory (ENOENT)")
            let searched = try step(daemon, ["no-such-program-in-path"])
            #expect(searched.reasonCode == 127)
            #expect(searched.reasonMessage == "cannot run no-such-program-in-path: uv_spawn: no such file or directory (ENOENT)")
        }
    }

    @Test("a cwd that does not exist is refused with status 127 and ENOENT, as before")
    func missingDirectoryReason() throws {
        try E2EDaemon.with { daemon in
            let record = try step(daemon, ["true"], cwd: daemon.directory + "/no-such-folder")
            #expect(record.state == .rejected)
            #expect(record.reasonCode == 127)
            #expect(record.reasonMessage == "cannot run true: uv_spawn: no such file or directory (ENOENT)")
        }
    }

    @Test("a file that is not executable is refused with EACCES, also when found through PATH")
    func notExecutableReason() throws {
        try E2EDaemon.with { daemon in
            let folder = daemon.directory + "/bin"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: folder + "/plain", contents: Data("echo hi\n".utf8),
                                                   attributes: [.posixPermissions: 0o644]))
            let direct = try step(daemon, [folder + "/plain"])
            #expect(direct.reasonMessage == "cannot run \(folder)/plain: uv_spawn: permission denied (EACCES)")
            let searched = try step(daemon, ["plain"], env: ["PATH": folder + ":/usr/bin:/bin"])
            #expect(searched.reasonMessage == "cannot run plain: uv_spawn: permission denied (EACCES)")
        }
    }

    @Test("a program is searched in the step's own PATH (env), and a script without #! runs with /bin/sh, as execvp did")
    func pathFromTheStepsEnvironment() throws {
        try E2EDaemon.with { daemon in
            let folder = daemon.directory + "/tools"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: folder + "/greet", contents: Data("echo \"hi $1\"\n".utf8),
                                                   attributes: [.posixPermissions: 0o755]))
            let record = try step(daemon, ["greet", "there"], env: ["PATH": folder + ":/usr/bin:/bin"])
            #expect(record.state == .fulfilled)
            #expect(record.value?.stringValue == "hi there")
        }
    }

    @Test("a program still open for writing (ETXTBSY) is tried again and runs once it is closed, not refused")
    func busyProgramIsTriedAgain() throws {
        try E2EDaemon.with { daemon in
            let script = daemon.directory + "/just-written"
            #expect(FileManager.default.createFile(atPath: script, contents: Data("#!/bin/sh\necho ran\n".utf8),
                                                   attributes: [.posixPermissions: 0o755]))
            // Held open for writing, as by the step that wrote it (or a process forked meanwhile).
            let writer = open(script, O_WRONLY)
            try #require(writer >= 0)
            let closer = Thread {
                Thread.sleep(forTimeInterval: 0.15)
                close(writer)
            }
            closer.start()
            let record = try step(daemon, [script])
            #expect(record.state == .fulfilled, "\(record.reasonMessage ?? "")")
            #expect(record.value?.stringValue == "ran")
        }
    }

    @Test("a program found after 200 PATH folders that lack it is started by one process: the folders cost no spawn")
    func missingPathFoldersCostNoProcess() throws {
        try E2EDaemon.with { daemon in
            func pid(_ record: BlockingPromiseClient.Record) throws -> Int {
                try #require(record.value?.intValue ?? record.value?.stringValue.flatMap { Int($0) })
            }
            let missing = (0..<200).map { "\(daemon.directory)/missing-\($0)" }.joined(separator: ":")
            let before = try pid(step(daemon, ["sh", "-c", "echo $$"], env: ["PATH": "/usr/bin:/bin"]))
            let after = try pid(step(daemon, ["sh", "-c", "echo $$"], env: ["PATH": missing + ":/usr/bin:/bin"]))
            // Each folder tried with a posix_spawn of its own took a pid (a
            // process that failed its exec): 200 between the two steps. Other
            // tests start processes meanwhile, so the bound is loose.
            let text = try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8)
            let pidMax = try #require(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)))
            let gap = (after - before + pidMax) % pidMax
            #expect(gap < 100, "\(gap) pids were used between the two steps")
        }
    }

    @Test("a step still starts, and exits 0, once the daemon holds 10,000 promises")
    func spawnsWithManyPromises() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            defer { client.close() }
            let name = String(repeating: "n", count: 40)
            for batch in 0..<10 {
                let entries = (0..<1000).map { n in
                    BlockingPromiseClient.BatchEntry("create", ["id": .string("many/\(batch)/\(n)"), "name": .string(name)])
                }
                let results = try client.batch(entries)
                #expect(results.allSatisfy { if case .success = $0 { true } else { false } })
            }
            let record = try step(daemon, ["sh", "-c", "echo '\"started\"'"])
            #expect(record.state == .fulfilled)
            #expect(record.value == "started")
        }
    }
}
