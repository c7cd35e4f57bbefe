import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseClient
#endif

/// Each error code, the exact answer shape, and bad input of every kind: the
/// daemon answers, keeps the connection usable (except for an unframeable
/// stream) and keeps serving everyone else.
@Suite("protocol errors and bad input")
struct ProtocolErrorTests {
    /// The `error` member of the next answer on `raw`.
    private func nextError(_ raw: E2ERawConnection) throws -> (id: JSONValue?, error: JSONValue) {
        let answer = try #require(try raw.readMessage(), "no answer")
        #expect(answer["jsonrpc"] == "2.0")
        let error = try #require(answer["error"], "not an error answer: \(answer)")
        #expect(error["message"]?.stringValue != nil)
        return (answer["id"], error)
    }

    /// The connection still answers a plain request.
    private func expectUsable(_ raw: E2ERawConnection, _ comment: Comment? = nil) throws {
        raw.writeLine(#"{"jsonrpc":"2.0","id":"probe","method":"info","params":{}}"#)
        let answer = try raw.readMessage()
        #expect(answer?["id"] == "probe", comment)
        #expect(answer?["result"]?["protocol"] == 1, comment)
    }

    @Test("a line that is not JSON answers -32700 with id null and the connection stays usable")
    func parseError() throws {
        try E2EDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            raw.writeLine("{this is not json")
            let (id, error) = try nextError(raw)
            #expect(id == .null)
            #expect(error["code"] == -32700)
            try expectUsable(raw)
        }
    }

    @Test("JSON that is not a request object answers -32600")
    func invalidRequest() throws {
        try E2EDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            for line in [
                "42", #""text""#, #"{"jsonrpc":"1.0","id":1,"method":"info","params":{}}"#,
                #"{"jsonrpc":"2.0","id":2,"method":7,"params":{}}"#, #"{"jsonrpc":"2.0","id":3}"#,
            ] {
                raw.writeLine(line)
                let (_, error) = try nextError(raw)
                #expect(error["code"] == -32600, "\(line)")
            }
            try expectUsable(raw)
        }
    }

    @Test("an empty batch answers a single -32600")
    func emptyBatch() throws {
        try E2EDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            raw.writeLine("[]")
            let (_, error) = try nextError(raw)
            #expect(error["code"] == -32600)
            try expectUsable(raw)
        }
    }

    @Test("an unknown method answers -32601 with the request's id")
    func methodNotFound() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let error = #expect(throws: RPCError.self) { try client.call("frobnicate", [:]) }
            #expect(error?.code == .methodNotFound)
            try client.call("info")
        }
    }

    @Test("missing or mistyped params answer -32602")
    func invalidParams() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "a"])
            let calls: [(String, [String: JSONValue])] = [
                ("get", [:]), ("get", ["id": 5]), ("resolve", ["value": 1]), ("create", ["id": ""]),
                ("create", ["id": .string(String(repeating: "x", count: 300))]),
                ("wait", ["id": "a", "timeoutMs": "soon"]), ("subscribe", ["ids": "a"]),
                ("all", ["ids": "a"]), ("all", ["ids": ["a"], "policy": "sometimes"]),
                ("then", ["id": "a", "on": "whenever"]), ("then", ["id": "a", "exec": []]),
            ]
            for (method, params) in calls {
                let error = #expect(throws: RPCError.self, "\(method) \(params)") { try client.call(method, params) }
                #expect(error?.code == .invalidParams, "\(method) \(params)")
            }
            let raw = try E2ERawConnection(path: daemon.socketPath)
            raw.writeLine(#"{"jsonrpc":"2.0","id":1,"method":"get","params":["a"]}"#)
            let (id, error) = try nextError(raw)
            #expect(id == 1)
            #expect(error["code"] == -32602 || error["code"] == -32600)
        }
    }

    @Test("invalid UTF-8 answers -32700 and the connection stays usable")
    func invalidUTF8() throws {
        try E2EDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            var line = Array(#"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":""#.utf8)
            line += [0xFF, 0xFE, 0xC0, 0x80]
            line += Array(#""}}"#.utf8) + [UInt8(ascii: "\n")]
            raw.write(line)
            let (_, error) = try nextError(raw)
            #expect(error["code"] == -32700)
            try expectUsable(raw)
        }
    }

    @Test("100000 nested brackets answer an error without crashing the daemon")
    func deepNesting() throws {
        try E2EDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            raw.writeLine(String(repeating: "[", count: 100_000))
            let (_, unclosed) = try nextError(raw)
            #expect(unclosed["code"] == -32700)
            raw.writeLine(String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000))
            let (_, balanced) = try nextError(raw)
            #expect(balanced["code"] == -32700 || balanced["code"] == -32600)
            try expectUsable(raw)
            #expect(daemon.isRunning)
        }
    }

    @Test("a line over the limit answers -32004 and then the connection is closed; others are unaffected")
    func overlongLine() throws {
        try E2EDaemon.with { daemon in
            let bystander = try daemon.client()
            let raw = try E2ERawConnection(path: daemon.socketPath)
            let limit = DaemonLimits().maxLineBytes
            var line = Array(#"{"jsonrpc":"2.0","id":1,"method":"create","params":{"name":""#.utf8)
            line += [UInt8](repeating: UInt8(ascii: "x"), count: limit)
            line += Array(#""}}"#.utf8) + [UInt8(ascii: "\n")]
            raw.write(line)
            let (_, error) = try nextError(raw)
            #expect(error["code"] == -32004)
            #expect(raw.drainUntilClosed(timeout: .seconds(5)).closed)
            #expect(try bystander.call("info")["protocol"] == 1)
        }
    }

    @Test("a line just under the limit is accepted")
    func lineAtLimit() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let overhead = #"{"id":1,"jsonrpc":"2.0","method":"create","params":{"name":""}}"#.utf8.count
            let name = String(repeating: "y", count: DaemonLimits().maxLineBytes - overhead - 16)
            let record = try client.call("create", ["name": .string(name)])
            #expect(record["name"]?.stringValue?.count == name.count)
        }
    }

    @Test("\\r\\n line endings are tolerated")
    func crlf() throws {
        try E2EDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            raw.write(Array("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"info\",\"params\":{}}\r\n".utf8))
            let answer = try raw.readMessage()
            #expect(answer?["id"] == 5)
            #expect(answer?["result"] != nil)
        }
    }

    @Test("a notification (no id) is executed and never answered, even when it fails")
    func notificationsAreNotAnswered() throws {
        try E2EDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            raw.writeLine(#"{"jsonrpc":"2.0","method":"create","params":{"id":"quiet"}}"#)
            raw.writeLine(#"{"jsonrpc":"2.0","method":"get","params":{"id":"missing"}}"#)
            raw.writeLine(#"{"jsonrpc":"2.0","method":"nonsense","params":{}}"#)
            raw.writeLine(#"{"jsonrpc":"2.0","id":9,"method":"get","params":{"id":"quiet"}}"#)
            let answer = try raw.readMessage()
            #expect(answer?["id"] == 9)
            #expect(answer?["result"]?["state"] == "pending")
        }
    }

    @Test("a client that never reads is cut off without stalling anyone else")
    func slowReaderIsCutOff() throws {
        try E2EDaemon.with { daemon in
            let setup = try daemon.client()
            let big = String(repeating: "z", count: 512 * 1024)
            try setup.call("create", ["id": "big"])
            try setup.call("resolve", ["id": "big", "value": .string(big)])

            let slow = try E2ERawConnection(path: daemon.socketPath)
            let request = Array(#"{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":"big"}}"#.utf8) + [10]
            // 64 answers of half a megabyte each: far more than the daemon buffers for one client.
            for _ in 0..<64 {
                guard slow.write(request) else { break }
            }
            let start = ContinuousClock.now
            let other = try daemon.client(timeout: .seconds(5))
            #expect(try other.call("info")["protocol"] == 1)
            #expect(ContinuousClock.now - start < .seconds(2))

            // It reads nothing for longer than the daemon lets paused answers sit (5 s, checked every 0.5 s).
            Thread.sleep(forTimeInterval: 7.5)
            let drained = slow.drainUntilClosed(timeout: .seconds(15))
            #expect(drained.closed)
            #expect(drained.lines < 64)
            #expect(try other.call("get", ["id": "big"])["state"] == "fulfilled")
        }
    }

    @Test("a client of another uid gets -32003 and is disconnected", .enabled(if: getuid() == 0, "needs root to act as another uid"))
    func otherUIDRefused() throws {
        try E2EDaemon.with { daemon in
            // Only reads (socat -u): the refusal comes unasked, and a write could race the close.
            // Open the file-system gate (0600 socket) so that only the daemon's own check remains.
            chmod(daemon.directory, 0o755)
            chmod(daemon.socketPath, 0o666)
            let result = try E2ECommand.run(
                "/usr/bin/setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/socat", "-u", "UNIX-CONNECT:\(daemon.socketPath)", "-"],
                timeout: .seconds(10))
            let firstLine = result.stdout.split(separator: "\n").first.map(String.init) ?? ""
            let answer = try? JSONValue(parsing: firstLine)
            #expect(answer?["error"]?["code"] == -32003, "\(result)")
            #expect(answer?["result"] == nil)
        }
    }
}
