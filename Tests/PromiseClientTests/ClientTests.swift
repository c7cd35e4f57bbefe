import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("BlockingPromiseClient against a scripted fake daemon")
struct ClientTests {
    @Test("call sends a JSON-RPC 2.0 request line and returns the matching result")
    func callReturnsResult() throws {
        let server = try ClientFakeServer { connection in
            let request = try #require(try connection.readMessage())
            #expect(request["jsonrpc"] == "2.0")
            #expect(request["method"] == "get")
            #expect(request["params"] == ["id": "a"])
            #expect(request["id"]?.intValue != nil)
            connection.answer(request, result: ["id": "a", "state": "pending", "parent": nil])
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        let record = try BlockingPromiseClient.Record(client.call("get", ["id": "a"]))
        #expect(record.id == "a")
        #expect(record.state == .pending)
    }

    @Test("an error answer is thrown as RPCError with code, message and data")
    func errorAnswerThrows() throws {
        let server = try ClientFakeServer { connection in
            let request = try #require(try connection.readMessage())
            connection.write(#"{"jsonrpc":"2.0","id":\#(request["id"]!),"error":{"code":-32001,"message":"no promise \"x\"","data":{"id":"x"}}}"#)
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        #expect(throws: RPCError(.noSuchPromise, #"no promise "x""#, data: ["id": "x"])) {
            try client.call("get", ["id": "x"])
        }
    }

    @Test("pipelined requests are matched to answers that come in reverse order")
    func pipelinedOutOfOrder() throws {
        let server = try ClientFakeServer { connection in
            var requests: [JSONValue] = []
            for _ in 0..<3 { requests.append(try #require(try connection.readMessage())) }
            for request in requests.reversed() {
                connection.answer(request, result: request["params"]?["n"] ?? .null)
            }
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        let ids = try (1...3).map { try client.send("echo", ["n": .int($0)]) }
        #expect(Set(ids).count == 3)
        #expect(try ids.map { try client.result(for: $0) } == [1, 2, 3])
    }

    @Test("notifications that arrive before an answer are queued in order")
    func notificationsQueuedWhileWaiting() throws {
        let server = try ClientFakeServer { connection in
            let request = try #require(try connection.readMessage())
            connection.write(#"{"jsonrpc":"2.0","method":"progress","params":{"id":"a","progress":0.5}}"#)
            connection.write(#"{"jsonrpc":"2.0","method":"settled","params":{"id":"a","state":"fulfilled","value":1}}"#)
            connection.answer(request, result: ["subscribed": 1])
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        #expect(try client.call("subscribe", ["ids": ["a"]]) == ["subscribed": 1])
        #expect(client.hasQueuedNotifications)
        let first = try #require(try client.nextNotification(timeout: .seconds(1)))
        let second = try #require(try client.nextNotification(timeout: .seconds(1)))
        #expect(first.method == "progress")
        #expect(first.params["progress"] == 0.5)
        #expect(second.method == "settled")
        #expect(second.params["value"] == 1)
        #expect(try client.nextNotification(timeout: .zero) == nil)
    }

    @Test("a notification pushed later is returned by nextNotification while it waits")
    func notificationArrivesWhileWaiting() throws {
        let server = try ClientFakeServer { connection in
            Thread.sleep(forTimeInterval: 0.1)
            connection.write(#"{"jsonrpc":"2.0","method":"settled","params":{"id":"late","state":"cancelled"}}"#)
            _ = connection.readLine()
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        let notification = try #require(try client.nextNotification(timeout: .seconds(5)))
        #expect(notification.params["id"] == "late")
        #expect(notification.json == ["jsonrpc": "2.0", "method": "settled", "params": ["id": "late", "state": "cancelled"]])
    }

    @Test("notify sends a request without id")
    func notifySendsNoID() throws {
        let server = try ClientFakeServer { connection in
            let message = try #require(try connection.readMessage())
            #expect(message == ["jsonrpc": "2.0", "method": "cancel", "params": ["id": "a"]])
            connection.write("ok")
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        try client.notify("cancel", ["id": "a"])
        server.stop()
    }

    @Test("a batch is sent as one JSON array and its array answer is matched per entry")
    func batchRoundTrip() throws {
        let server = try ClientFakeServer { connection in
            let batch = try #require(try connection.readMessage()?.arrayValue)
            #expect(batch.count == 3)
            #expect(batch[1]["id"] == nil)
            let answers: JSONValue = [
                ["jsonrpc": "2.0", "id": batch[2]["id"]!, "error": ["code": -32006, "message": "exists"]],
                ["jsonrpc": "2.0", "id": batch[0]["id"]!, "result": "first"],
            ]
            connection.write(answers.description)
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        let results = try client.batch([
            .init("create", ["id": "a"]), .init("cancel", ["id": "z"], isNotification: true), .init("create", ["id": "a"]),
        ])
        #expect(results.count == 2)
        #expect(try results[0].get() == "first")
        #expect(throws: RPCError(.alreadyExists, "exists")) { try results[1].get() }
    }

    @Test("no answer within the timeout throws timedOut, without waiting much longer")
    func readTimeout() throws {
        let server = try ClientFakeServer { connection in
            _ = connection.readLine()
            Thread.sleep(forTimeInterval: 2)
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .milliseconds(100))
        defer { client.close() }
        let start = ContinuousClock.now
        let error = #expect(throws: PromiseClientError.self) { try client.call("wait", ["id": "a"]) }
        #expect(error?.code == .timedOut)
        // The fake answers after 2 s; giving up well before that is the client's own timeout
        // (with room for a loaded machine).
        #expect(ContinuousClock.now - start < .milliseconds(1_500))
    }

    @Test("the daemon closing the connection before answering throws connectionClosed")
    func closedBeforeAnswer() throws {
        let server = try ClientFakeServer { connection in
            _ = connection.readLine()
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        let error = #expect(throws: PromiseClientError.self) { try client.call("get", ["id": "a"]) }
        #expect(error?.code == .connectionClosed)
    }

    @Test("a line that is not JSON throws invalidResponse")
    func garbageFromDaemon() throws {
        let server = try ClientFakeServer { connection in
            _ = connection.readLine()
            connection.write("this is not json")
            _ = connection.readLine()
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        let error = #expect(throws: PromiseClientError.self) { try client.call("info") }
        #expect(error?.code == .invalidResponse)
    }

    @Test("a missing socket file is reported as daemon not running, naming the path")
    func missingSocket() throws {
        let path = NSTemporaryDirectory() + "client-missing-\(UUID().uuidString.prefix(8)).sock"
        let error = #expect(throws: PromiseClientError.self) { try BlockingPromiseClient(socketPath: path) }
        #expect(error?.code == .daemonUnreachable)
        #expect(error?.errno == ENOENT)
        #expect(error?.message.hasPrefix("daemon not running at \(path); start it with `promised`") == true)
    }

    @Test("a socket file nobody listens on is reported as daemon not running")
    func refusedSocket() throws {
        let directory = NSTemporaryDirectory() + "client-refused-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/s.sock"
        close(try ClientFakeServer.listen(at: path))
        let error = #expect(throws: PromiseClientError.self) { try BlockingPromiseClient(socketPath: path) }
        #expect(error?.code == .daemonUnreachable)
        #expect(error?.errno == ECONNREFUSED)
        #expect(error?.message.contains("daemon not running at \(path)") == true)
    }

    @Test("a socket path longer than sockaddr_un allows is refused before connecting")
    func overlongPath() {
        let path = "/tmp/" + String(repeating: "p", count: 200) + ".sock"
        let error = #expect(throws: PromiseClientError.self) { try BlockingPromiseClient(socketPath: path) }
        #expect(error?.code == .socketPathTooLong)
    }
}
