@testable import PromiseJSON
import PromiseTestSupport
import Testing

/// `JSONTextBuffer` starts on the writer's stack and moves to the heap when
/// a text outgrows it; every byte must survive the move, wherever it falls.
@Suite("JSON text buffer")
struct JSONTextBufferTests {
    @Test("a string's text is written whole at, around and far beyond the stack room",
          arguments: [2, 511, 512, 513, 1_024, 1_025, 70_000])
    func longStrings(textLength: Int) {
        let body = String((0..<textLength - 2).map { Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8($0 % 26))) })
        let text = JSONValue.string(body).serialized()
        #expect(text.count == textLength)
        #expect(String(decoding: text, as: UTF8.self) == "\"" + body + "\"")
    }

    @Test("a line is the text and one newline, whether the newline falls inside the stack room, at its end or beyond",
          arguments: [2, 510, 511, 512, 513, 1_024])
    func lines(textLength: Int) {
        let value = JSONValue.string(String(repeating: "n", count: textLength - 2))
        let line = value.serializedLine()
        #expect(line == value.serialized() + [UInt8(ascii: "\n")])
        #expect(line.count == textLength + 1)
    }

    @Test("a lent line is the text and one newline, inside the stack room, at its end or beyond it",
          arguments: [2, 510, 511, 512, 513, 1_024, 70_000])
    func lentLines(textLength: Int) {
        let value = JSONValue.string(String(repeating: "l", count: textLength - 2))
        let lent = JSONTextBuffer.withLine({ value.write(to: &$0) }) { Array($0) }
        #expect(lent == value.serialized() + [UInt8(ascii: "\n")])
        #expect(lent.count == textLength + 1)
    }

    @Test("integers are written as their decimal digits, at every width and both signs",
          arguments: [0, 9, 10, -1, -9, -10, 99, 100, -100, 1_795_619_706_963, 999_999_999_999_999_999,
                      Int.max, Int.min, Int.min + 1])
    func integers(value: Int) {
        let text = JSONTextBuffer.bytes { JSONValue.writeInt(value, to: &$0) }
        #expect(String(decoding: text, as: UTF8.self) == String(value))
    }

    @Test("integers of every number of digits, at both ends of each, and of both signs, are their decimal digits")
    func integersOfEveryWidth() {
        var values: [Int] = [Int.max, Int.min, Int.min + 1, Int.max - 1]
        var power = 1
        for digits in 1...19 {
            // 10^(digits-1) and its neighbours, 10^digits - 1 (all nines), and some in between.
            values += [power - 1, power, power + 1, power * 2 - 1, power * 5 + 3, (power - 1) * 9 + 8]
            if digits < 19 { power *= 10 }
        }
        values += values.map { 0 &- $0 }
        var random = SeededRandom(seed: 7)
        values += (0..<2_000).map { _ in Int(bitPattern: UInt(random.next())) >> Int(random.next() % 64) }
        for value in values {
            let text = JSONTextBuffer.bytes { text in
                text.append("[")
                JSONValue.writeInt(value, to: &text)
                text.append("]")
            }
            #expect(String(decoding: text, as: UTF8.self) == "[\(value)]")
        }
    }

    @Test("a text that grows several times, in the middle of keys, escapes and numbers, keeps every byte")
    func manyGrowths() throws {
        var members: [String: JSONValue] = [:]
        var expected: [String] = []
        for index in 0..<400 {
            let key = "k\(String(index).count)\(index)"
            let even = index.isMultiple(of: 2)
            members[key] = even ? .int(-index * 1_000_003) : .string("q\"\(index)\n")
            expected.append(#""\#(key)":"# + (even ? String(-index * 1_000_003) : #""q\"\#(index)\n""#))
        }
        expected.sort()
        let value = JSONValue.object(members)
        let text = String(decoding: value.serialized(), as: UTF8.self)
        #expect(text == "{" + expected.joined(separator: ",") + "}")
        #expect(try JSONValue(parsing: text) == value)
    }

    @Test("an object written member by member across the stack room is the text of the same object as a value")
    func objectWriterAcrossGrowth() {
        let names = (0..<60).map { "name number \($0)" }
        let written = JSONTextBuffer.bytes { text in
            JSONObjectWriter.append(to: &text) { object in
                object.value("created", .int(1_795_454_472_776))
                object.string("id", "a")
                object.strings("names", names)
                object.value("progress", .double(0.25))
            }
        }
        let value: JSONValue = [
            "created": 1_795_454_472_776, "id": "a", "names": .array(names.map(JSONValue.string)), "progress": 0.25,
        ]
        #expect(written.count > JSONTextBuffer.stackCapacity)
        #expect(String(decoding: written, as: UTF8.self) == value.description)
    }

    @Test("appends of every length up to past the inline copies, after every offset, keep every byte")
    func appendLengths() {
        for offset in 0...9 {
            for length in 0...40 {
                let prefix = (0..<offset).map { UInt8(truncatingIfNeeded: 0xA0 + $0) }
                let bytes = (0..<length).map { UInt8(truncatingIfNeeded: 1 + $0 * 7) }
                let written = JSONTextBuffer.bytes { text in
                    text.append(prefix)
                    text.append(bytes)
                    text.append(UInt8(ascii: "."))
                }
                #expect(written == prefix + bytes + [UInt8(ascii: ".")], "\(length) bytes after \(offset)")
            }
        }
    }

    @Test("each kind of member, first or after another, is written as the text of the same object as a value")
    func objectWriterMembers() {
        typealias Member = (write: (inout JSONObjectWriter) -> Void, value: (key: String, value: JSONValue))
        let members: [Member] = [
            ({ $0.null("nothing") }, ("nothing", .null)),
            ({ $0.literal("jsonrpc", #""2.0""#) }, ("jsonrpc", "2.0")),
            ({ $0.literal("list", "[1,true]") }, ("list", [1, true])),
            ({ $0.string("state", literal: "pending") }, ("state", "pending")),
            ({ $0.string("s", literal: "") }, ("s", "")),
            ({ $0.strings("none", []) }, ("none", [])),
            ({ $0.strings("some", ["a", "b\"c"]) }, ("some", ["a", "b\"c"])),
            ({ $0.int("n", -1_795_454_472_776) }, ("n", -1_795_454_472_776)),
            ({ $0.double("progress", 0.25) }, ("progress", 0.25)),
            ({ $0.string("a key of more than sixteen bytes", "x") }, ("a key of more than sixteen bytes", "x")),
            ({ $0.value("v", ["k": [1]]) }, ("v", ["k": [1]])),
        ]
        for first in members {
            for second in members where second.value.key > first.value.key {
                let written = JSONTextBuffer.bytes { text in
                    JSONObjectWriter.append(to: &text) { object in
                        first.write(&object)
                        second.write(&object)
                    }
                }
                let value = JSONValue.object([first.value.key: first.value.value, second.value.key: second.value.value])
                #expect(String(decoding: written, as: UTF8.self) == value.description)
            }
            let alone = JSONTextBuffer.bytes { text in JSONObjectWriter.append(to: &text) { first.write(&$0) } }
            #expect(String(decoding: alone, as: UTF8.self) == JSONValue.object([first.value.key: first.value.value]).description)
        }
    }

    @Test("an object with no members is written as {}")
    func emptyObject() {
        let written = JSONTextBuffer.bytes { text in JSONObjectWriter.append(to: &text) { _ in } }
        #expect(written == Array("{}".utf8))
    }

    @Test("write(into:) appends after what the array already holds")
    func writeIntoAppends() {
        var out = Array("prefix ".utf8)
        JSONValue.array([1, "two", nil]).write(into: &out)
        #expect(String(decoding: out, as: UTF8.self) == #"prefix [1,"two",null]"#)
    }
}
