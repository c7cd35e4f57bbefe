import Foundation
import PromiseClient
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseJSON
#endif

/// SIGTERM and SIGINT on a durable daemon: answer what is in flight, flush,
/// close, exit 0; the next daemon on the store has everything acknowledged.
@Suite("shutdown of a durable daemon")
struct ShutdownTests {
    @Test("SIGTERM exits 0 within 5 s and the next daemon on the store has every acknowledged change")
    func sigtermKeepsEverything() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            let requests = try (0..<300).map { index in
                try client.send("create", ["id": .string("s/\(index)"), "name": .string("number \(index)")])
            }
            for request in requests { try client.result(for: request) }
            let resolves = try stride(from: 0, to: 300, by: 2).map { index in
                try client.send("resolve", ["id": .string("s/\(index)"), "value": ["i": .int(index)]])
            }
            for request in resolves { try client.result(for: request) }
            try client.call("then", ["id": "s/1", "childId": "s/1/child"])
            try client.call("progress", ["id": "s/3", "progress": 0.75, "message": "most"])

            let started = ContinuousClock.now
            let status = daemon.terminate(grace: .seconds(5))
            #expect(status == 0, "exit status \(status.map(String.init) ?? "none within 5 s"); log: \(daemon.logTail())")
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(!FileManager.default.fileExists(atPath: daemon.socketPath), "the socket file was left behind")
            let error = #expect(throws: PromiseClientError.self) { try client.call("info", [:], timeout: .seconds(2)) }
            #expect(error?.code == .connectionClosed || error?.code == .ioFailure, "\(String(describing: error))")
            client.close()

            try daemon.start()
            let after = try daemon.client()
            let records = try daemon.allRecords(client: after)
            #expect(records.count == 301)
            let wrong = (0..<300).filter { index in
                guard let record = records["s/\(index)"], record.json["name"]?.stringValue == "number \(index)" else { return true }
                return index % 2 == 0 ? record.value != ["i": .int(index)] : record.state != .pending
            }
            #expect(wrong.isEmpty, "missing or changed after SIGTERM and restart: s/\(wrong.prefix(10)) (\(wrong.count) of 300)")
            #expect(records["s/1/child"]?.parent == "s/1")
            #expect(records["s/3"]?.json["progressMessage"] == "most")
        }
    }

    @Test("SIGTERM answers requests in flight, then the client sees EOF; every answered change is stored")
    func sigtermAnswersInFlight() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client(timeout: .seconds(8))
            let requests = try (0..<2000).map { index in try client.send("create", ["id": .string("f/\(index)")]) }
            kill(daemon.pid ?? 0, SIGTERM)
            // Each is answered (acknowledged, or refused with an error) or cut off by the close.
            var answered: [String] = []
            var refused: [String] = []
            for (index, request) in requests.enumerated() {
                do {
                    try client.result(for: request)
                    answered.append("f/\(index)")
                } catch let error as RPCError {
                    refused.append("f/\(index): \(error.code.rawValue) \(error.message)")
                } catch let error as PromiseClientError {
                    #expect(error.code == .connectionClosed, "request \(index): \(error)")
                }
            }
            #expect(answered.count >= 1, "nothing was answered before the close")
            let status = daemon.waitForExit(within: .seconds(5))
            #expect(status == 0, "exit status \(status.map(String.init) ?? "none within 5 s"); log: \(daemon.logTail())")
            client.close()

            try daemon.start()
            let records = try daemon.allRecords(client: try daemon.client())
            let lost = answered.filter { records[$0] == nil }
            #expect(lost.isEmpty, "answered before SIGTERM but lost: \(lost.prefix(20)) (\(lost.count) of \(answered.count))")
            let unknown = records.keys.filter { !$0.hasPrefix("f/") }
            #expect(unknown.isEmpty)
            if !refused.isEmpty {
                let refusedIDs = refused.map { String($0.prefix { $0 != ":" }) }
                let stored = refusedIDs.filter { records[$0] != nil }
                #expect(stored.isEmpty, "refused at shutdown but stored: \(stored.prefix(10)); first refusal \(refused[0])")
            }
        }
    }

    @Test("waiters and idle clients see a clean close at SIGTERM; the promise they waited for is still pending after")
    func waitersSeeCleanClose() throws {
        try E2EDurableDaemon.with { daemon in
            let setup = try daemon.client()
            try setup.call("create", ["id": "awaited"])
            let waiter = try daemon.client(timeout: .seconds(10))
            let waitID = try waiter.send("wait", ["id": "awaited"])
            let subscriber = try daemon.client(timeout: .seconds(10))
            try subscriber.call("subscribe", ["ids": ["awaited"]])
            let idle = try (0..<10).map { _ in try daemon.client(timeout: .seconds(10)) }
            Thread.sleep(forTimeInterval: 0.05)

            let started = ContinuousClock.now
            #expect(daemon.terminate(grace: .seconds(5)) == 0, "log: \(daemon.logTail())")
            let waitError = #expect(throws: PromiseClientError.self) { try waiter.result(for: waitID) }
            #expect(waitError?.code == .connectionClosed, "\(String(describing: waitError))")
            let pushError = #expect(throws: PromiseClientError.self) { try subscriber.nextNotification(timeout: .seconds(10)) }
            #expect(pushError?.code == .connectionClosed, "\(String(describing: pushError))")
            for client in idle {
                let error = #expect(throws: PromiseClientError.self) { try client.nextNotification(timeout: .seconds(10)) }
                #expect(error?.code == .connectionClosed)
                client.close()
            }
            #expect(ContinuousClock.now - started < .seconds(6))
            for client in [setup, waiter, subscriber] { client.close() }

            try daemon.start()
            #expect(try daemon.record("awaited")?.state == .pending)
        }
    }

    @Test("SIGINT stops the durable daemon with exit status 0 and keeps the store")
    func sigintKeepsEverything() throws {
        try E2EDurableDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "kept"])
            try client.call("resolve", ["id": "kept", "value": "by SIGINT"])
            #expect(daemon.terminate(signal: SIGINT, grace: .seconds(5)) == 0, "log: \(daemon.logTail())")
            client.close()
            try daemon.start()
            #expect(try daemon.record("kept")?.value == "by SIGINT")
        }
    }

    @Test("with --stop-steps, an exec command running at SIGTERM is stopped and its child rejected, not run again by the next daemon")
    func runningExecAtShutdown() throws {
        try E2EDurableDaemon.with(extraArguments: ["--kill-grace-ms", "500", "--stop-steps"]) { daemon in
            let client = try daemon.client()
            let command = try daemon.startLongCommand(client)
            let (runs, pidFile) = (command.runs, command.pidFile)
            defer { E2E.killGroup(fromPIDFile: pidFile) }
            let execPID = E2E.pid(fromFile: pidFile, timeout: .seconds(10))
            #expect(execPID != nil, "the command did not start")

            let status = daemon.terminate(grace: .seconds(7))
            #expect(status == 0, "exit status \(status.map(String.init) ?? "none within 7 s"); log: \(daemon.logTail())")
            if let execPID {
                #expect(E2E.eventually(timeout: .seconds(10)) { !E2E.isAlive(execPID) }, "the command outlived the daemon")
            }
            client.close()

            try daemon.start()
            let after = try daemon.client()
            let child = try E2E.record(after.call("get", ["id": "c"]))
            #expect(child.state == .rejected, "\(child.json)")
            #expect(child.reasonMessage?.contains("was running when the daemon stopped") == true, "\(child.json)")
            Thread.sleep(forTimeInterval: 0.3)
            #expect(E2E.lines(ofFile: runs) == ["ran"], "the command ran again after the restart")
        }
    }
}
