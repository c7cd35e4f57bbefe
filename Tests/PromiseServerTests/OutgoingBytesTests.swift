import CLibUV
@testable import PromiseServer
import Testing

@Suite("OutgoingBytes")
struct OutgoingBytesTests {
    /// The bytes the queue would write now, joined.
    private func contents(_ queue: OutgoingBytes) -> [UInt8] {
        queue.withBuffers { buffers in
            buffers.flatMap { buffer in
                Array(UnsafeRawBufferPointer(start: buffer.base, count: buffer.len))
            }
        }
    }

    private func bufferCount(_ queue: OutgoingBytes) -> Int {
        queue.withBuffers { $0.count }
    }

    @Test("short messages are copied into one block, in order")
    func shortMessagesShareABlock() {
        let queue = OutgoingBytes()
        for text in ["a\n", "bc\n", "def\n"] { Array(text.utf8).withUnsafeBytes { queue.append($0) } }
        #expect(contents(queue) == Array("a\nbc\ndef\n".utf8))
        #expect(queue.count == 9)
        #expect(bufferCount(queue) == 1)
    }

    @Test("a long message is kept by reference to its array, between the copied ones")
    func longMessagesAreKeptByReference() {
        let queue = OutgoingBytes()
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: OutgoingBytes.sharedFrom) + [UInt8(ascii: "\n")]
        Array("a\n".utf8).withUnsafeBytes { queue.append($0) }
        queue.append(shared: long[...])
        Array("b\n".utf8).withUnsafeBytes { queue.append($0) }
        #expect(contents(queue) == Array("a\n".utf8) + long + Array("b\n".utf8))
        #expect(bufferCount(queue) == 3)
        let pointsIntoArray = queue.withBuffers { buffers in
            long.withUnsafeBytes { UnsafeRawPointer(buffers[1].base) == $0.baseAddress }
        }
        #expect(pointsIntoArray)
    }

    @Test("a short shared slice is copied, not kept")
    func shortSharedSlicesAreCopied() {
        let queue = OutgoingBytes()
        let line = Array("[1,2]\n".utf8)
        queue.append(shared: line[1...])
        Array("x".utf8).withUnsafeBytes { queue.append($0) }
        #expect(contents(queue) == Array("1,2]\nx".utf8))
        #expect(bufferCount(queue) == 1)
    }

    @Test("copied bytes past a block's size go to a new block; what is in the full one does not move")
    func fullBlocksDoNotMove() {
        let queue = OutgoingBytes()
        let chunk = [UInt8](repeating: 7, count: 40_000)
        chunk.withUnsafeBytes { queue.append($0) }
        let firstBase = queue.withBuffers { $0[0].base }
        chunk.withUnsafeBytes { queue.append($0) }
        chunk.withUnsafeBytes { queue.append($0) }
        #expect(queue.count == 120_000)
        #expect(bufferCount(queue) == 3)
        #expect(queue.withBuffers { $0[0].base } == firstBase)
    }

    @Test("removing written bytes starts the next write where the last ended, within a segment or across several")
    func removeFirstKeepsTheRest() {
        let queue = OutgoingBytes()
        let long = (0..<20_000).map { UInt8(truncatingIfNeeded: $0) }
        Array("head".utf8).withUnsafeBytes { queue.append($0) }
        queue.append(shared: long[...])
        Array("tail".utf8).withUnsafeBytes { queue.append($0) }
        queue.removeFirst(2)
        #expect(contents(queue) == Array("ad".utf8) + long + Array("tail".utf8))
        queue.removeFirst(2 + 19_999)
        #expect(contents(queue) == [long[19_999]] + Array("tail".utf8))
        #expect(queue.count == 5)
        queue.removeFirst(5)
        #expect(queue.isEmpty)
        #expect(contents(queue).isEmpty)
        Array("again".utf8).withUnsafeBytes { queue.append($0) }
        #expect(contents(queue) == Array("again".utf8))
    }

    @Test("the descriptions of several segments go in a scratch array kept from one flush to the next")
    func severalSegmentsReuseTheScratchArray() {
        let queue = OutgoingBytes()
        let long = [UInt8](repeating: 1, count: OutgoingBytes.sharedFrom)
        for _ in 0..<3 { queue.append(shared: long[...]) }
        let first = queue.withBuffers { UnsafeRawPointer($0.baseAddress) }
        // Takes the memory a freed array would have left for the next call.
        let blocker = [uv_buf_t](repeating: uv_buf_t(), count: 3)
        let second = queue.withBuffers { UnsafeRawPointer($0.baseAddress) }
        #expect(first == second)
        #expect(blocker.count == 3)
        #expect(bufferCount(queue) == 3)
    }
}
