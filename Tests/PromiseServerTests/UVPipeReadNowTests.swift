import Foundation
import Glibc
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseServer
import Testing

/// `UVPipe.readNow()`, the read `ReadAhead` makes when a loop turn ends:
/// what the socket holds goes to the pipe's reader at once, as libuv's reads
/// go; nothing is read while reading is paused, and the end of the stream
/// is left for libuv to report.
@Suite("UVPipe.readNow")
struct UVPipeReadNowTests {
    /// What the pipe's callbacks saw, readable from the test thread.
    struct Seen {
        var chunks: [String] = []
        var ended = false
    }

    /// A pipe on the loop thread of `thread`, on one end of a socket pair
    /// (the other end is returned), its reads recorded in `seen`.
    private static func openPipe(
        on thread: LoopThread, seen: ServerLocked<Seen>
    ) throws -> (peer: Int32, pipe: ServerLocked<UVPipe?>) {
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw UVError(code: -errno, function: "socketpair")
        }
        let pipe = ServerLocked<UVPipe?>(nil)
        let local = ends[0]
        thread.onLoop { loop in
            guard let made = try? UVPipe(loop: loop) else { return }
            try? made.open(local)
            try? made.startReading(onRead: { bytes in
                seen.update { $0.chunks.append(String(decoding: bytes, as: UTF8.self)) }
            }, onEnd: { _ in
                seen.update { $0.ended = true }
            })
            pipe.update { $0 = made }
        }
        #expect(serverWaitUntil { pipe.value != nil })
        return (ends[1], pipe)
    }

    /// Runs `body` with a loop thread, a pipe on it, the pipe's peer end,
    /// and what the pipe has read; stops the thread after.
    private static func withPipe(
        _ body: (LoopThread, Int32, ServerLocked<UVPipe?>, ServerLocked<Seen>) throws -> Void
    ) throws {
        let thread = try LoopThread(name: "read-now-test")
        thread.start { _ in }
        defer {
            thread.stop()
            thread.waitUntilFinished(timeout: .seconds(5))
        }
        let seen = ServerLocked(Seen())
        let (peer, pipe) = try openPipe(on: thread, seen: seen)
        try body(thread, peer, pipe, seen)
    }

    /// Runs `body` on the loop thread and waits for it.
    private static func onLoop(_ thread: LoopThread, _ body: @escaping @Sendable () -> Void) {
        let done = ServerLocked(false)
        thread.onLoop { _ in
            body()
            done.update { $0 = true }
        }
        #expect(serverWaitUntil { done.value })
    }

    private static func send(_ text: String, to fd: Int32) {
        let written = text.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, text.utf8.count) }
        #expect(written == text.utf8.count)
    }

    @Test("hands what the socket holds to the reader before it returns, and nothing when it holds nothing")
    func readsWhatIsThere() throws {
        try Self.withPipe { thread, peer, pipe, seen in
            defer { close(peer) }

            // Nothing sent: nothing read, and no end reported.
            let emptyRead = ServerLocked<[String]?>(nil)
            Self.onLoop(thread) {
                pipe.value?.readNow()
                emptyRead.update { $0 = seen.value.chunks }
            }
            #expect(emptyRead.value == [])

            // Sent, then read at once from the loop thread: the reader has it when
            // readNow returns (libuv's read would come only at the loop's next poll).
            // Pausing first keeps libuv's own read from taking it meanwhile.
            Self.onLoop(thread) { pipe.value?.pauseReading() }
            Self.send("ahead\n", to: peer)
            let afterRead = ServerLocked<[String]?>(nil)
            Self.onLoop(thread) {
                pipe.value?.readNow()  // Paused: reads nothing.
                let whilePaused = seen.value.chunks
                try? pipe.value?.resumeReading()
                pipe.value?.readNow()
                let chunks = seen.value.chunks
                afterRead.update { $0 = whilePaused + ["|"] + chunks }
            }
            #expect(afterRead.value == ["|", "ahead\n"])
            #expect(seen.value.ended == false)
        }
    }

    @Test("at the end of the stream reads nothing and leaves the end for libuv to report")
    func leavesTheEndToLibuv() throws {
        try Self.withPipe { thread, peer, pipe, seen in
            Self.onLoop(thread) { pipe.value?.pauseReading() }
            Self.send("last\n", to: peer)
            close(peer)
            let atEnd = ServerLocked<Seen?>(nil)
            Self.onLoop(thread) {
                try? pipe.value?.resumeReading()
                pipe.value?.readNow()  // The line.
                pipe.value?.readNow()  // The end: not reported here.
                atEnd.update { $0 = seen.value }
            }
            #expect(atEnd.value?.chunks == ["last\n"])
            #expect(atEnd.value?.ended == false)
            // libuv's next read meets the end and reports it.
            #expect(serverWaitUntil { seen.value.ended })
            #expect(seen.value.chunks == ["last\n"])
        }
    }
}
