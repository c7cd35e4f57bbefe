import PromiseModel
import PromiseRPC
import PromiseServer
import Testing

@Suite("LineFramer")
struct LineFramerTests {
    private func strings(_ lines: [[UInt8]]) -> [String] {
        lines.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with `stream` in consecutive pieces of 1 byte, then of
    /// sizes stepping by `step` and wrapping below `largest`, so that line
    /// ends fall at every position in a piece.
    private func inOddPieces(
        _ stream: [UInt8], largest: Int, step: Int, _ body: (ArraySlice<UInt8>) throws -> Void
    ) rethrows {
        var offset = 0
        var size = 1
        while offset < stream.count {
            let end = min(stream.count, offset + size)
            try body(stream[offset..<end])
            offset = end
            size = size % largest + step
        }
    }

    @Test("one read holding many lines yields each line in order")
    func manyLinesInOneRead() throws {
        var framer = LineFramer(maxLineBytes: 100)
        let lines = try framer.lines(in: Array("a\nbb\nccc\n".utf8))
        #expect(strings(lines) == ["a", "bb", "ccc"])
        #expect(framer.bufferedByteCount == 0)
    }

    @Test("a line split across reads is delivered once it is complete")
    func lineSplitAcrossReads() throws {
        var framer = LineFramer(maxLineBytes: 100)
        #expect(try framer.lines(in: Array("{\"id\"".utf8)).isEmpty)
        #expect(try framer.lines(in: Array(":1".utf8)).isEmpty)
        #expect(framer.bufferedByteCount == 7)
        let lines = try framer.lines(in: Array("}\n{\"id\":2}\n{".utf8))
        #expect(strings(lines) == ["{\"id\":1}", "{\"id\":2}"])
        #expect(framer.bufferedByteCount == 1)
    }

    @Test("a line fed one byte at a time comes out whole")
    func byteAtATime() throws {
        var framer = LineFramer(maxLineBytes: 100)
        var lines: [[UInt8]] = []
        for byte in Array("hello\r\nworld\n".utf8) {
            lines += try framer.lines(in: [byte])
        }
        #expect(strings(lines) == ["hello", "world"])
    }

    @Test("empty lines are delivered as empty arrays")
    func emptyLines() throws {
        var framer = LineFramer(maxLineBytes: 10)
        let lines = try framer.lines(in: Array("\n\r\nx\n\n".utf8))
        #expect(strings(lines) == ["", "", "x", ""])
    }

    @Test("CRLF loses its CR; only one trailing CR is dropped; inner CRs stay")
    func crlf() throws {
        var framer = LineFramer(maxLineBytes: 10)
        let lines = try framer.lines(in: Array("a\r\nb\r\r\nc\rd\n".utf8))
        #expect(lines == [Array("a".utf8), Array("b\r".utf8), Array("c\rd".utf8)])
    }

    @Test("CRLF split between reads, CR at the end of the first")
    func crlfSplitAcrossReads() throws {
        var framer = LineFramer(maxLineBytes: 10)
        #expect(try framer.lines(in: Array("abc\r".utf8)).isEmpty)
        #expect(strings(try framer.lines(in: Array("\n".utf8))) == ["abc"])
    }

    @Test("a line of exactly the limit is accepted, with LF or CRLF, whole or in pieces")
    func exactlyAtLimit() throws {
        let line = [UInt8](repeating: 0x61, count: 8)
        var whole = LineFramer(maxLineBytes: 8)
        #expect(try whole.lines(in: line + [0x0A]) == [line])
        var crlf = LineFramer(maxLineBytes: 8)
        #expect(try crlf.lines(in: line + [0x0D, 0x0A]) == [line])
        var pieces = LineFramer(maxLineBytes: 8)
        #expect(try pieces.lines(in: line).isEmpty)
        #expect(try pieces.lines(in: [0x0D]).isEmpty)
        #expect(try pieces.lines(in: [0x0A]) == [line])
    }

    @Test("one byte over the limit throws LineTooLong, even before the newline arrives")
    func overLimit() throws {
        var framer = LineFramer(maxLineBytes: 8)
        #expect(throws: LineFramer.LineTooLong(limit: 8)) {
            try framer.lines(in: [UInt8](repeating: 0x61, count: 9))
        }
        #expect(framer.isUnframeable)

        var withNewline = LineFramer(maxLineBytes: 8)
        #expect(throws: LineFramer.LineTooLong(limit: 8)) {
            try withNewline.lines(in: [UInt8](repeating: 0x61, count: 9) + [0x0A])
        }
    }

    @Test("nine bytes ending in CR wait for the LF that would make them an 8-byte line")
    func carriageReturnAtLimitWaits() throws {
        var framer = LineFramer(maxLineBytes: 8)
        #expect(try framer.lines(in: [UInt8](repeating: 0x61, count: 8) + [0x0D]).isEmpty)
        #expect(throws: LineFramer.LineTooLong(limit: 8)) {
            try framer.lines(in: [0x62])
        }
    }

    @Test("an over-long line split across reads throws once its pieces pass the limit")
    func overLimitAcrossReads() throws {
        var framer = LineFramer(maxLineBytes: 8)
        #expect(try framer.lines(in: Array("abcde".utf8)).isEmpty)
        #expect(throws: LineFramer.LineTooLong(limit: 8)) {
            try framer.lines(in: Array("fghij\n".utf8))
        }
    }

    @Test("lines completed before an over-long one in the same read are delivered first")
    func goodLinesBeforeTheBadOne() throws {
        var framer = LineFramer(maxLineBytes: 4)
        var delivered: [String] = []
        #expect(throws: LineFramer.LineTooLong(limit: 4)) {
            try framer.feed(Array("ok\nfine\ntoo long\nnever\n".utf8)) {
                delivered.append(String(decoding: $0, as: UTF8.self))
            }
        }
        #expect(delivered == ["ok", "fine"])
    }

    @Test("once unframeable, every later feed throws and delivers nothing")
    func staysUnframeable() throws {
        var framer = LineFramer(maxLineBytes: 2)
        _ = try? framer.lines(in: Array("xyz".utf8))
        var delivered = 0
        #expect(throws: LineFramer.LineTooLong.self) {
            try framer.feed(Array("a\n".utf8)) { _ in delivered += 1 }
        }
        #expect(delivered == 0)
        #expect(framer.finish() == nil)
    }

    @Test("finish hands over an unterminated last line, without a trailing CR")
    func finishReturnsTheRest() throws {
        var framer = LineFramer(maxLineBytes: 10)
        #expect(strings(try framer.lines(in: Array("a\nlast\r".utf8))) == ["a"])
        #expect(framer.finish() == Array("last".utf8))
        #expect(framer.finish() == nil)
    }

    @Test("finish with nothing buffered returns nil")
    func finishWhenEmpty() {
        var framer = LineFramer(maxLineBytes: 10)
        #expect(framer.finish() == nil)
    }

    @Test("a zero limit accepts only empty lines")
    func zeroLimit() throws {
        var framer = LineFramer(maxLineBytes: 0)
        #expect(try framer.lines(in: Array("\n\r\n".utf8)) == [[], []])
        #expect(throws: LineFramer.LineTooLong(limit: 0)) {
            try framer.lines(in: Array("a".utf8))
        }
    }

    @Test("a large stream of many lines in odd-sized pieces comes out unchanged")
    func largeStreamInPieces() throws {
        let expected = (0..<2_000).map { "{\"jsonrpc\":\"2.0\",\"id\":\($0),\"method\":\"get\"}" }
        let stream = Array(expected.joined(separator: "\r\n").utf8) + [0x0A]
        var framer = LineFramer(maxLineBytes: 64)
        var got: [String] = []
        try inOddPieces(stream, largest: 97, step: 13) { piece in
            got += strings(try framer.lines(in: piece))
        }
        #expect(got == expected)
    }

    @Test("lent lines are the same lines, whether read whole or built from pieces, and CRs are dropped the same way")
    func lentLinesInPieces() throws {
        let expected = (0..<500).map { "{\"id\":\($0),\"pad\":\"\(String(repeating: "x", count: $0 % 37))\"}" }
        let stream = Array(expected.joined(separator: "\r\n").utf8) + [0x0D, 0x0A]
        var framer = LineFramer(maxLineBytes: 128)
        var got: [String] = []
        try inOddPieces(stream, largest: 211, step: 29) { piece in
            try piece.withUnsafeBytes { bytes in
                try framer.feed(bytes, lending: { line in got.append(String(decoding: line, as: UTF8.self)) })
            }
        }
        #expect(got == expected)
        #expect(framer.bufferedByteCount == 0)
    }
}
