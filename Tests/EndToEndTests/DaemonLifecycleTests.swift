import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("promised: start, socket, info, stop")
struct DaemonLifecycleTests {
    @Test("the socket is created with mode 0600")
    func socketMode() throws {
        try E2EDaemon.with { daemon in
            var info = stat()
            #expect(stat(daemon.socketPath, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600)
            #expect(info.st_mode & S_IFMT == S_IFSOCK)
        }
    }

    @Test("info reports protocol 1, counts and the limits")
    func info() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            defer { client.close() }
            _ = try client.call("create", ["id": "one"])
            let info = try client.call("info")
            #expect(info["protocol"] == 1)
            #expect(info["version"]?.stringValue?.isEmpty == false)
            #expect(info["promises"] == 1)
            #expect((info["connections"]?.intValue ?? 0) >= 1)
            #expect(info["limits"]?["maxLineBytes"]?.intValue == DaemonLimits().maxLineBytes)
        }
    }

    @Test("SIGTERM stops the daemon with exit status 0")
    func sigtermExitsCleanly() throws {
        let daemon = try E2EDaemon()
        let status = daemon.stop(grace: .seconds(5))
        #expect(status == 0, "log: \(daemon.log)")
    }

    @Test("SIGINT stops the daemon with exit status 0 and closes its clients")
    func sigintExitsCleanly() throws {
        let daemon = try E2EDaemon()
        defer { daemon.stop() }
        let client = try daemon.client(timeout: .seconds(5))
        defer { client.close() }
        kill(daemon.pid, SIGINT)
        #expect(E2E.eventually(timeout: .seconds(5)) { !daemon.isRunning })
        #expect(daemon.stop() == 0)
        let error = #expect(throws: PromiseClientError.self) { try client.call("info") }
        #expect(error?.code == .connectionClosed)
    }

    @Test("promisectl reaches the daemon through PROMISED_SOCKET and through --socket")
    func socketDiscovery() throws {
        try E2EDaemon.with { daemon in
            let viaEnvironment = try daemon.ctl("info")
            #expect(viaEnvironment.status == 0, "\(viaEnvironment)")
            let viaFlag = try E2ECommand.run(
                E2EBinaries.promisectl, ["info", "--socket", daemon.socketPath],
                environment: ["PROMISED_SOCKET": "/nonexistent/elsewhere.sock"])
            #expect(viaFlag.status == 0, "\(viaFlag)")
            #expect(try JSONValue(parsing: viaFlag.stdout)["protocol"] == 1)
        }
    }

    @Test("a daemon started with every signal blocked still reaps exec children and stops on SIGTERM")
    func blockedSignalsAtStart() throws {
        var all = sigset_t()
        var previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_BLOCK, &all, &previous)
        let daemon: E2EDaemon
        do {
            defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
            daemon = try E2EDaemon(cleanSignals: false)
        }
        defer { daemon.stop() }
        let client = try daemon.client()
        try client.call("create", ["id": "p"])
        try client.call("then", ["id": "p", "childId": "c", "exec": ["true"]])
        try client.call("resolve", ["id": "p", "value": 1])
        let record = try E2E.record(client.call("wait", ["id": "c", "timeoutMs": 5000]))
        #expect(record.state == .fulfilled)
        client.close()
        #expect(daemon.stop(grace: .seconds(5)) == 0)
    }
}
