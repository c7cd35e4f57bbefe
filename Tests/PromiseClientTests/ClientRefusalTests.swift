import Foundation
import PromiseClient
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseJSON
#endif

/// A daemon that refuses a client says why in one error line with a null
/// id, then closes (issue 22, item 7): the client throws that error, not
/// "the daemon closed the connection", whether its request got out or not.
@Suite("BlockingPromiseClient: the daemon's reason for closing")
struct ClientRefusalTests {
    static let refusal = #"{"jsonrpc":"2.0","id":null,"error":{"code":-32004,"message":"too many connections (limit 1)","data":{"limit":"maxConnections","value":1}}}"#
    static let expected = RPCError(.limitExceeded, "too many connections (limit 1)",
                                   data: ["limit": "maxConnections", "value": 1])

    @Test("a refusal written after the request, then a close, is thrown as the daemon's RPCError")
    func refusalAfterRequest() throws {
        let server = try ClientFakeServer { connection in
            _ = try connection.readMessage()
            connection.write(Self.refusal)
        }
        defer { server.stop() }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        #expect(throws: Self.expected) { try client.call("info") }
    }

    @Test("a refusal written before the request could be sent (the write fails) is thrown as the daemon's RPCError")
    func refusalBeforeRequest() throws {
        let server = try ClientFakeServer { connection in
            connection.write(Self.refusal)
        }
        let client = try BlockingPromiseClient(socketPath: server.path, timeout: .seconds(5))
        defer { client.close() }
        server.stop()  // the script has ended and its side is closed: the request's write fails (EPIPE)
        #expect(throws: Self.expected) { try client.call("info") }
    }
}
