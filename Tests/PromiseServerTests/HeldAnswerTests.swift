import PromiseModel
@testable import PromiseRPC
@testable import PromiseServer
import Testing

/// A connection cuts off a client whose held and queued bytes pass
/// `maxOutputBufferBytes`, as it does for queued bytes alone: bytes the
/// durable journal holds back for a peer count towards its output limit.
@Suite("held bytes count towards a connection's output limit")
struct HeldAnswerTests {
    /// Holds the bytes each "hold N" line names (never releasing them), then answers "ok".
    final class HoldingHandler: RPCHandler {
        func connectionOpened(_ peer: any RPCPeer) {}
        func connectionClosed(_ peer: any RPCPeer) {}

        func handle(line: [UInt8], from peer: any RPCPeer) {
            let words = String(decoding: line, as: UTF8.self).split(separator: " ")
            if words.first == "hold", let bytes = Int(words[1]) { peer.hold(bytes: bytes) }
            peer.send(Array("ok\n".utf8))
        }
    }

    @Test("a connection whose held bytes pass maxOutputBufferBytes is cut off at its next message")
    func heldBytesCutOff() throws {
        var limits = DaemonLimits()
        limits.maxOutputBufferBytes = 1_000
        let directory = ServerTestDirectory()
        defer { directory.remove() }
        let server = try Server(socketPath: directory.socketPath, limits: limits, logger: serverTestLogger,
                                handlesSignals: false)
        server.start { _ in HoldingHandler() }
        defer {
            server.stop()
            server.waitUntilStopped(timeout: .seconds(10))
        }

        let within = try ServerTestClient(path: directory.socketPath)
        try within.send("hold 400")
        #expect(try within.readLine() == "ok")

        let past = try ServerTestClient(path: directory.socketPath)
        try past.send("hold 1200")
        #expect(try past.readToEnd().isEmpty)
        try within.send("again")
        #expect(try within.readLine() == "ok")
    }
}
