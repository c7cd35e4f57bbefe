import Foundation
import Glibc
import PromiseModel
@testable import PromiseRPC
@testable import PromiseServer
import Testing

/// How a connection hands its queued bytes to the socket, seen from a real
/// client: flushes of more segments than one `sendmsg` takes, and a close
/// while a `uv_write` of shared bytes is in flight.
@Suite("connection writes")
struct ConnectionWriteTests {
    @Test("a flush of more than 1,024 segments sends the first 1,024 at once and the rest in a write: every byte arrives once, in order")
    func flushOfMoreSegmentsThanOneSendmsgTakes() throws {
        var limits = DaemonLimits()
        limits.maxOutputBufferBytes = 64 << 20
        let harness = try ServerHarness(limits: limits)
        defer { harness.shutDown() }
        let client = try harness.connect()
        // Each message is long enough to be queued by reference: one segment
        // each, all queued while one read is handled, so one flush holds 1,099.
        let count = 1_100
        let size = OutgoingBytes.sharedFrom + 100
        #expect(count - 1 > UVPipe.maxBuffersPerCall)
        try client.send("numbered \(count) \(size)")
        for index in 0..<count {
            let line = try #require(try client.readLineBytes(timeout: .seconds(30)))
            let expected = Array(String(100_000 + index).utf8.dropFirst()) + [UInt8](repeating: 0x79, count: size - 6)
            #expect(line == expected, "message \(index)")
            if line != expected { return }
        }
        try client.send("after")
        #expect(try client.readLine() == "after")
        #expect(harness.events.value.closed.isEmpty)
    }

    @Test("a connection closed while a write of shared bytes is in flight lets go of them once, and the server goes on")
    func closeWhileASharedWriteIsInFlight() throws {
        let harness = try ServerHarness()
        defer { harness.shutDown() }
        let client = try harness.connect()
        // 4 MB for a client that reads none: the socket takes a part, the
        // rest waits in a `uv_write` that points into the handler's array.
        try client.send("shared \(4 << 20)")
        #expect(serverWaitUntil { harness.events.value.shared != nil })
        client.close()
        #expect(serverWaitUntil { harness.events.value.closed.count == 1 })

        // Answers on another connection, in later loop turns: the loop is
        // past the close callback and past the end of the turn that read the
        // closed connection (which holds it until then).
        let other = try harness.connect()
        for index in 0..<3 {
            try other.send("ping \(index)")
            #expect(try other.readLine() == "ping \(index)")
        }

        // Changing the array copies it unless the handler's copy is the only
        // one left: the connection kept no reference.
        let unique = harness.events.update { events -> Bool in
            guard events.shared != nil else { return false }
            let base = events.shared!.withUnsafeMutableBytes { UnsafeRawPointer($0.baseAddress) }
            return base == events.sharedBase
        }
        #expect(unique)
        #expect(harness.events.value.closed.count == 1)
    }
}
