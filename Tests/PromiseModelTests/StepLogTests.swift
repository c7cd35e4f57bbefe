import PromiseModel
import Testing

@Suite("StepLog: the capped tail of a stream")
struct StepLogTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test("under the limit every byte is kept, nothing dropped")
    func underLimit() {
        var log = StepLog(limit: 8)
        log.append(bytes("abc"))
        log.append(bytes("de"))
        #expect(log.bytes == bytes("abcde"))
        #expect(log.dropped == 0)
        #expect(log.total == 5)
    }

    @Test("past the limit the oldest bytes are cut from the front, and counted exactly")
    func cutFromFront() {
        var log = StepLog(limit: 4)
        log.append(bytes("abc"))
        log.append(bytes("def"))
        #expect(log.bytes == bytes("cdef"))
        #expect(log.dropped == 2)
        log.append(bytes("g"))
        #expect(log.bytes == bytes("defg"))
        #expect(log.dropped == 3)
        #expect(log.total == 7)
    }

    @Test("a chunk longer than the limit keeps its own end only")
    func chunkLongerThanLimit() {
        var log = StepLog(limit: 3)
        log.append(bytes("ab"))
        log.append(bytes("0123456789"))
        #expect(log.bytes == bytes("789"))
        #expect(log.dropped == 9)
    }

    @Test("the ring wraps many times and still reads oldest first",
          arguments: [1, 2, 3, 5, 7])
    func wrapsInOrder(chunk: Int) {
        var log = StepLog(limit: 10)
        var all: [UInt8] = []
        for index in 0..<97 {
            let piece = (0..<chunk).map { UInt8((index * chunk + $0) % 251) }
            all += piece
            log.append(piece)
        }
        #expect(log.bytes == Array(all.suffix(10)))
        #expect(log.dropped == all.count - 10)
    }

    @Test("memory held never passes the limit, however much is written")
    func capacityBounded() {
        var log = StepLog(limit: 1000)
        for _ in 0..<100 { log.append([UInt8](repeating: 7, count: 333)) }
        #expect(log.count == 1000)
        #expect(log.dropped == 100 * 333 - 1000)
    }

    @Test("a limit of 0 keeps nothing and counts everything as dropped")
    func zeroLimit() {
        var log = StepLog(limit: 0)
        log.append(bytes("abc"))
        #expect(log.bytes.isEmpty)
        #expect(log.dropped == 3)
    }

    @Test("skip drops what was kept and counts the bytes never received")
    func skipCounts() {
        var log = StepLog(limit: 4)
        log.append(bytes("ab"))
        log.skip(5)
        log.append(bytes("xy"))
        #expect(log.bytes == bytes("xy"))
        #expect(log.dropped == 7)
        #expect(log.total == 9)
    }

    @Test("a stored log comes back with its bytes and dropped count; a smaller limit cuts more")
    func restored() {
        let log = StepLog(limit: 4, bytes: bytes("wxyz"), dropped: 10)
        #expect(log.bytes == bytes("wxyz"))
        #expect(log.dropped == 10)
        let smaller = StepLog(limit: 2, bytes: bytes("wxyz"), dropped: 10)
        #expect(smaller.bytes == bytes("yz"))
        #expect(smaller.dropped == 12)
    }

    @Test("UTF-8: the start of a character cut by a chunk is found, complete text is not held back",
          arguments: [
            ([0x61], 0), ([0x61, 0xE2], 1), ([0x61, 0xE2, 0x82], 2), ([0xE2, 0x82, 0xAC], 0),
            ([0xF0, 0x9F, 0x98], 3), ([0xF0, 0x9F, 0x98, 0x80], 0), ([0xC3], 1), ([0xC3, 0xA9], 0),
            ([0x80, 0x80], 0), ([0xFF], 0), ([], 0),
          ] as [([UInt8], Int)])
    func utf8Boundary(bytes: [UInt8], held: Int) {
        #expect(UTF8Boundary.incompleteSuffixLength(bytes) == held)
    }
}
