import Foundation
import Glibc
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseServer
import Testing

@Suite("Server")
struct ServerTests {
    private func errorCode(_ line: String?) -> Int? {
        guard let line, let json = try? JSONValue(parsing: line) else { return nil }
        return json["error"]?["code"]?.intValue
    }

    private func isNullID(_ line: String?) -> Bool {
        guard let line, let json = try? JSONValue(parsing: line) else { return false }
        return json["id"]?.isNull == true && json["jsonrpc"]?.stringValue == "2.0"
    }

    @Test("the socket is created 0600 in a folder created 0700")
    func socketModes() throws {
        let harness = try ServerHarness()
        defer { harness.shutDown() }
        var status = stat()
        #expect(stat(harness.socketPath, &status) == 0)
        #expect(status.st_mode & S_IFMT == S_IFSOCK)
        #expect(status.st_mode & 0o777 == 0o600)
        #expect(stat(harness.directory.path + "/run", &status) == 0)
        #expect(status.st_mode & 0o777 == 0o700)
    }

    @Test("a line goes to the handler and its answer comes back, with CRLF and split writes")
    func lineRoundTrip() throws {
        let harness = try ServerHarness()
        defer { harness.shutDown() }
        let client = try harness.connect()
        try client.send("hello")
        #expect(try client.readLine() == "hello")
        try client.send("one\r\ntwo", newline: false)
        try client.send("\nthr", newline: false)
        try client.send("ee")
        #expect(try client.readLine() == "one")
        #expect(try client.readLine() == "two")
        #expect(try client.readLine() == "three")
        let events = harness.events.value
        #expect(events.lines == ["hello", "one", "two", "three"])
        #expect(events.opened.count == 1)
        #expect(events.allOnLoopThread)
    }

    @Test("many pipelined requests in one write are all answered, in order")
    func pipelinedRequests() throws {
        let harness = try ServerHarness()
        defer { harness.shutDown() }
        let client = try harness.connect()
        let requests = (0..<5_000).map { "{\"id\":\($0)}" }
        try client.send(requests.joined(separator: "\n"))
        var answers: [String] = []
        for _ in requests {
            answers.append(try client.readLine() ?? "<end>")
        }
        #expect(answers == requests)
    }

    @Test("connectionClosed follows connectionOpened exactly once when the client closes")
    func openCloseOnce() throws {
        let harness = try ServerHarness()
        defer { harness.shutDown() }
        let client = try harness.connect()
        try client.send("x")
        _ = try client.readLine()
        client.close()
        #expect(serverWaitUntil { harness.events.value.closed.count == 1 })
        usleep(50_000)
        let events = harness.events.value
        #expect(events.opened == events.closed)
        #expect(events.closed.count == 1)
        #expect(events.allOnLoopThread)
    }

    @Test("a line over the limit gets one -32004 error with a null id, then the connection closes")
    func lineTooLong() throws {
        var limits = DaemonLimits()
        limits.maxLineBytes = 100
        let harness = try ServerHarness(limits: limits)
        defer { harness.shutDown() }
        let client = try harness.connect()
        try client.send("short")
        #expect(try client.readLine() == "short")
        try client.send(String(repeating: "a", count: 101), newline: false)
        let lines = try client.readToEnd()
        #expect(lines.count == 1)
        #expect(errorCode(lines.first) == -32004)
        #expect(isNullID(lines.first))
        #expect(serverWaitUntil { harness.events.value.closed.count == 1 })
        #expect(harness.events.value.lines == ["short"])
    }

    @Test("a line of exactly the limit is handled")
    func lineAtLimit() throws {
        var limits = DaemonLimits()
        limits.maxLineBytes = 100
        let harness = try ServerHarness(limits: limits)
        defer { harness.shutDown() }
        let client = try harness.connect()
        let line = String(repeating: "b", count: 100)
        try client.send(line + "\r")
        #expect(try client.readLine() == line)
    }

    @Test("a client that never reads is cut off while another client keeps getting answers")
    func slowReaderIsCutOff() throws {
        var limits = DaemonLimits()
        limits.maxOutputBufferBytes = 256 * 1024
        let harness = try ServerHarness(limits: limits)
        defer { harness.shutDown() }
        let sleeper = try harness.connect()
        let reader = try harness.connect()
        try reader.send("before")
        #expect(try reader.readLine() == "before")

        // 16 MiB of answers for a client that reads none of them.
        try sleeper.send("flood 1024 16384")
        #expect(serverWaitUntil { harness.events.value.closed.count == 1 })
        for index in 0..<50 {
            try reader.send("still \(index)")
            #expect(try reader.readLine() == "still \(index)")
        }
        #expect(harness.events.value.closed.count == 1)
        // The sleeper gets at most what the socket buffers held, then the end.
        let received = try sleeper.readToEnd().count
        #expect(received < 1024)
    }

    @Test("a client that pipelines faster than it reads is slowed down, not cut off")
    func pipeliningClientThrottled() throws {
        var limits = DaemonLimits()
        limits.maxOutputBufferBytes = 64 * 1024
        let harness = try ServerHarness(limits: limits)
        defer { harness.shutDown() }
        let client = try harness.connect()
        let line = String(repeating: "p", count: 200)
        let count = 20_000  // 4 MB of answers: 64 times the limit
        let fd = client.fd
        let writer = Thread {
            let bytes = Array(String(repeating: line + "\n", count: count).utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written <= 0 { return }
                offset += written
            }
        }
        writer.start()
        usleep(200_000)  // read nothing for a while
        var received = 0
        while received < count, let answer = try client.readLine(), answer == line {
            received += 1
        }
        #expect(received == count)
        #expect(harness.events.value.closed.isEmpty)
    }

    @Test("one answer larger than the output limit still reaches a client that reads")
    func bigAnswerForReadingClient() throws {
        var limits = DaemonLimits()
        limits.maxOutputBufferBytes = 64 * 1024
        let harness = try ServerHarness(limits: limits)
        defer { harness.shutDown() }
        let client = try harness.connect()
        try client.send("flood 1 1000000")
        #expect(try client.readLineBytes()?.count == 1_000_000)
        try client.send("after")
        #expect(try client.readLine() == "after")
    }

    @Test("past maxConnections a client gets -32004 and is closed; the handler never sees it")
    func maxConnections() throws {
        var limits = DaemonLimits()
        limits.maxConnections = 2
        limits.reservedConnections = 0
        let harness = try ServerHarness(limits: limits)
        defer { harness.shutDown() }
        let first = try harness.connect()
        let second = try harness.connect()
        try first.send("1")
        try second.send("2")
        #expect(try first.readLine() == "1")
        #expect(try second.readLine() == "2")

        let third = try harness.connect()
        let refused = try third.readToEnd()
        #expect(refused.count == 1)
        #expect(errorCode(refused.first) == -32004)
        #expect(isNullID(refused.first))
        #expect(harness.events.value.opened.count == 2)

        first.close()
        #expect(serverWaitUntil { harness.events.value.closed.count == 1 })
        let fourth = try harness.connect()
        try fourth.send("4")
        #expect(try fourth.readLine() == "4")
    }

    @Test("a peer of another uid gets -32003 and is closed; the handler never sees it")
    func otherUIDRefused() throws {
        let harness = try ServerHarness(allowedPeerUID: getuid() &+ 1)
        defer { harness.shutDown() }
        let client = try harness.connect()
        let lines = try client.readToEnd()
        #expect(lines.count == 1)
        #expect(errorCode(lines.first) == -32003)
        #expect(isNullID(lines.first))
        usleep(50_000)
        #expect(harness.events.value.opened.isEmpty)
        #expect(harness.events.value.closed.isEmpty)
    }

    @Test("after end of stream from the client, answers sent later still arrive")
    func halfCloseKeepsWriting() throws {
        let harness = try ServerHarness()
        defer { harness.shutDown() }
        let client = try harness.connect()
        try client.send("later 150 done")
        client.shutdownWrite()
        #expect(try client.readLine() == "done")
        #expect(harness.events.value.closed.isEmpty)
        client.close()
        #expect(serverWaitUntil { harness.events.value.closed.count == 1 })
    }

    @Test("a last line without its newline is handled at end of stream")
    func unterminatedLastLine() throws {
        let harness = try ServerHarness()
        defer { harness.shutDown() }
        let client = try harness.connect()
        try client.send("tail", newline: false)
        client.shutdownWrite()
        #expect(try client.readLine() == "tail")
    }

    @Test("a client that takes no more answers makes the write fail: it is closed, and others are still served")
    func writeToClientThatStoppedReading() throws {
        let harness = try ServerHarness()
        defer { harness.shutDown() }
        let gone = try harness.connect()
        let other = try harness.connect()
        gone.shutdownRead()
        try gone.send("unwanted")
        #expect(serverWaitUntil { harness.events.value.closed.count == 1 })
        #expect(harness.events.value.lines == ["unwanted"])
        try other.send("still here")
        #expect(try other.readLine() == "still here")
        #expect(harness.events.value.closed.count == 1)
    }

    @Test("a client that closes without waiting is noticed and closed")
    func clientGoneAtOnce() throws {
        let harness = try ServerHarness()
        defer { harness.shutDown() }
        let client = try harness.connect()
        try client.send("bye")
        client.close()
        #expect(serverWaitUntil { harness.events.value.closed.count == 1 })
        #expect(harness.events.value.lines == ["bye"])
    }

    @Test("a stale socket file is replaced")
    func staleSocketReplaced() throws {
        let directory = ServerTestDirectory()
        defer { directory.remove() }
        let path = directory.path + "/p.sock"
        // Bind a socket and close it without unlinking: what a crashed daemon leaves.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #expect(UnixSocketAddress(path: path)?.bind(fd) == 0)
        Glibc.close(fd)
        #expect(FileManager.default.fileExists(atPath: path))

        let server = try Server(socketPath: path, logger: serverTestLogger, handlesSignals: false)
        let events = ServerLocked(ServerHandlerEvents())
        server.start { ServerEchoHandler(context: $0, events: events) }
        defer {
            server.stop()
            server.waitUntilStopped(timeout: .seconds(10))
        }
        let client = try ServerTestClient(path: path)
        try client.send("alive")
        #expect(try client.readLine() == "alive")
    }

    @Test("a live socket is not stolen: the second server fails with alreadyRunning")
    func liveSocketNotStolen() throws {
        let harness = try ServerHarness()
        defer { harness.shutDown() }
        #expect {
            _ = try Server(socketPath: harness.socketPath, logger: serverTestLogger, handlesSignals: false)
        } throws: { error in
            (error as? ServerError)?.code == .alreadyRunning
        }
        let client = try harness.connect()
        try client.send("still mine")
        #expect(try client.readLine() == "still mine")
    }

    @Test("a file that is not a socket is left alone")
    func regularFileLeftAlone() throws {
        let directory = ServerTestDirectory()
        defer { directory.remove() }
        let path = directory.path + "/p.sock"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("keep".utf8)))
        #expect {
            _ = try Server(socketPath: path, logger: serverTestLogger, handlesSignals: false)
        } throws: { error in
            (error as? ServerError)?.code == .notASocket
        }
        #expect(FileManager.default.contents(atPath: path) == Data("keep".utf8))
    }

    @Test("a socket path longer than 107 bytes is refused")
    func pathTooLong() throws {
        let path = "/tmp/" + String(repeating: "x", count: 120) + "/p.sock"
        #expect {
            _ = try Server(socketPath: path, logger: serverTestLogger, handlesSignals: false)
        } throws: { error in
            (error as? ServerError)?.code == .socketPathTooLong
        }
    }

    @Test("stop closes every connection, calls connectionClosed and removes the socket file")
    func stopClosesEverything() throws {
        let harness = try ServerHarness()
        let first = try harness.connect()
        let second = try harness.connect()
        try first.send("a")
        try second.send("b")
        #expect(try first.readLine() == "a")
        #expect(try second.readLine() == "b")
        harness.server.stop()
        #expect(harness.server.waitUntilStopped(timeout: .seconds(10)))
        #expect(try first.readToEnd().isEmpty)
        #expect(try second.readToEnd().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: harness.socketPath))
        let events = harness.events.value
        #expect(Set(events.closed) == Set(events.opened))
        #expect(events.closed.count == 2)
        harness.directory.remove()
    }

    @Test("stop lets a client read answers queued before it")
    func stopFlushes() throws {
        var limits = DaemonLimits()
        limits.maxOutputBufferBytes = 64 << 20
        let harness = try ServerHarness(limits: limits)
        let client = try harness.connect()
        // More than the socket buffers hold, so some of it is still queued at stop.
        try client.send("flood 64 65536")
        #expect(serverWaitUntil { harness.events.value.lines.count == 1 })
        harness.server.stop()
        let lines = try client.readToEnd()
        #expect(lines.count == 64)
        #expect(harness.server.waitUntilStopped(timeout: .seconds(10)))
        harness.directory.remove()
    }

    @Test("a handler factory that throws makes run throw, and the server stops")
    func factoryFailure() throws {
        struct Broken: Error {}
        let directory = ServerTestDirectory()
        defer { directory.remove() }
        let server = try Server(socketPath: directory.socketPath, logger: serverTestLogger, handlesSignals: false)
        #expect(throws: Broken.self) {
            try server.run { _ in throw Broken() }
        }
        #expect(!FileManager.default.fileExists(atPath: directory.socketPath))
    }

    @Test("SocketPath: --socket, then PROMISED_SOCKET, then XDG_RUNTIME_DIR, then a per-user temp folder")
    func socketPathResolution() {
        #expect(SocketPath.resolve(explicit: "/a.sock", environment: ["PROMISED_SOCKET": "/b.sock"]) == "/a.sock")
        #expect(SocketPath.resolve(explicit: nil, environment: ["PROMISED_SOCKET": "/b.sock",
                                                                 "XDG_RUNTIME_DIR": "/run/user/7"]) == "/b.sock")
        #expect(SocketPath.resolve(explicit: "", environment: ["PROMISED_SOCKET": "",
                                                                "XDG_RUNTIME_DIR": "/run/user/7/"])
                == "/run/user/7/promised.sock")
        #expect(SocketPath.resolve(explicit: nil, environment: [:]) == "/tmp/promised-\(getuid())/promised.sock")
        #expect(SocketPath.resolve(explicit: nil, environment: ["TMPDIR": "/var/tmp"])
                == "/var/tmp/promised-\(getuid())/promised.sock")
    }
}
