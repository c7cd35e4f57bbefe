import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseClient
#endif

/// One store, one daemon: a second `promised` on a store in use does not
/// start (it would take the first one's running steps for leftovers and stop
/// them), and names the daemon that holds the store.
@Suite("one store, one daemon")
struct StoreLockTests {
    @Test("a second daemon on the same store exits 1 naming the first one's pid and socket; the first one's step runs on")
    func secondDaemonRefused() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            defer { client.close() }
            let marker = daemon.directory + "/ran"
            try client.call("create", ["id": "root"])
            try client.call("then", [
                "id": "root", "childId": "step",
                "exec": ["sh", "-c", .string("echo started >> '\(marker)'; sleep 2; echo done")],
            ])
            try client.call("resolve", ["id": "root", "value": nil])
            #expect(E2E.eventually { FileManager.default.fileExists(atPath: marker) })

            let otherSocket = daemon.directory + "/other.sock"
            let second = try E2ECommand.run(
                E2EBinaries.promised, ["--socket", otherSocket, "--store", daemon.storeDirectory], timeout: .seconds(10))
            #expect(second.status == 1, "\(second)")
            let pid = try #require(daemon.pid)
            #expect(second.stderr.contains(
                "the store \(daemon.storeDirectory) is in use by another daemon (pid \(pid), socket \(daemon.socketPath)); "
                    + "one store serves one daemon: stop that one first, or give this one another --store"), "\(second)")
            #expect(!FileManager.default.fileExists(atPath: otherSocket))

            let step = try E2E.record(client.call("wait", ["id": "step", "timeoutMs": 10_000], timeout: .seconds(15)))
            #expect(step.state == .fulfilled, "\(step)")
            #expect(step.value?.stringValue?.trimmingCharacters(in: .newlines) == "done")
            #expect(try String(contentsOfFile: marker, encoding: .utf8) == "started\n")
            #expect(!daemon.log.contains("previous daemon"), "\(daemon.logTail())")
        }
    }

    @Test("the lock goes with the daemon: after kill -9 a new daemon takes the store and writes its own pid")
    func lockReleasedByKill() throws {
        try E2EDurableDaemon.with { daemon in
            let first = try #require(daemon.pid)
            try daemon.restart()
            let second = try #require(daemon.pid)
            #expect(first != second)
            let lock = try String(contentsOfFile: daemon.storeDirectory + "/promised.lock", encoding: .utf8)
            let holder = try JSONValue(parsing: lock)
            #expect(holder == .object(["pid": .int(Int(second)), "socket": .string(daemon.socketPath)]), "\(lock)")
        }
    }
}
