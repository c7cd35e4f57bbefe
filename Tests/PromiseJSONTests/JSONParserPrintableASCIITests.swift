@testable import PromiseJSON
import PromiseTestSupport
import Testing

/// `JSONParser.printableASCIIStringEnd(maxCount:)`, which the request
/// reader asks for common strings, envelope keys and lent ids: the end of
/// a string of printable ASCII written without escapes, of at most
/// `maxCount` bytes, read eight bytes a step while the text goes on that far.
@Suite("JSON parser: printable ASCII strings found without making a String")
struct JSONParserPrintableASCIITests {
    /// What the scanner says of the string `text` (its JSON text, quotes
    /// included), followed by `tail` bytes of line: its length, or nil.
    private func length(of text: String, maxCount: Int, tail: String = "") -> Int? {
        let line = Array((text + tail).utf8)
        // Read as one value, with the scanner asked first; the whole line is
        // then skipped as any value, so that `parse` accepts it.
        do {
            return try JSONParser.parse(line) { parser throws(JSONParseError) -> Int? in
                let end = parser.printableASCIIStringEnd(maxCount: maxCount)
                _ = try parser.parseValue()
                return end.map { $0 - 1 }
            }
        } catch {
            Issue.record("not one JSON value: \(text)\(tail)")
            return nil
        }
    }

    @Test("every length up to 40, with or without 8 bytes of line after it, is found up to maxCount")
    func lengths() {
        for count in 0...40 {
            let text = "\"" + printableText(count: count) + "\""
            for tail in ["", "          "] {
                #expect(length(of: text, maxCount: 40, tail: tail) == count, "\(count) \(tail.count)")
                #expect(length(of: text, maxCount: count, tail: tail) == count, "\(count) at its max")
                if count > 0 {
                    #expect(length(of: text, maxCount: count - 1, tail: tail) == nil, "\(count) over its max")
                }
            }
        }
    }

    @Test("DEL, a byte past ASCII or an escape anywhere is not printable ASCII without escapes")
    func refusals() {
        for count in [1, 7, 8, 9, 16, 17, 24] {
            for position in Set([0, count / 2, count - 1]) {
                for odd in ["\u{7F}", "é", "\\n", "\\\""] {
                    var characters = Array(String(repeating: "x", count: count))
                    characters[position] = "y"
                    let text = "\"" + String(characters).replacingFirst("y", with: odd) + "\""
                    #expect(length(of: text, maxCount: 64, tail: "          ") == nil, "\(text)")
                    #expect(length(of: text, maxCount: 64) == nil, "\(text) at the end of the line")
                }
            }
        }
        #expect(length(of: "12", maxCount: 64) == nil)
    }
}

private extension String {
    func replacingFirst(_ target: Character, with replacement: String) -> String {
        guard let index = firstIndex(of: target) else { return self }
        return String(self[..<index]) + replacement + String(self[self.index(after: index)...])
    }
}
