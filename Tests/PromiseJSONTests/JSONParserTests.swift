import PromiseJSON
import Testing

@Suite("JSON parser: strict RFC 8259")
struct JSONParserTests {
    @Test("text that Foundation accepts but JSON forbids is refused",
          arguments: ["[1,]", "{\"a\":1,}", "[01]", "[1.]", "[.5]", "[+1]", "[1e]", "\"\\x\"", "[1]x", "tru", "[\"a\"\"b\"]"])
    func refusesNonJSON(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
    }

    @Test("nesting deeper than 512 levels is refused without recursing into it")
    func refusesDeepNesting() throws {
        let deepest = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(try JSONValue(parsing: deepest).arrayValue?.count == 1)
        let tooDeep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: tooDeep) }
        let hostile = Array(repeating: UInt8(ascii: "["), count: 1_000_000)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: hostile) }
    }

    @Test("invalid UTF-8 and raw control characters in strings are refused")
    func refusesBadStrings() {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [0x22, 0xFF, 0xFE, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [0x22, 0xC3, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: "\"a\u{1}b\"") }
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: "\"\\ud800\"") }
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: "\"\\udc00\\ud800\"") }
    }

    @Test("a string reads the same whatever it holds where: each kind of byte at every place, before and after the 8-byte steps, near the end of the text or not")
    func stringsByPlace() throws {
        // What goes in the middle of the string, as written and as read; nil: refused.
        let middles: [(written: [UInt8], read: String?)] = [
            ([0x01], nil), ([0x1F], nil), ([0xFF], nil), ([0xC3], nil), (Array("é".utf8), "é"),
            (Array(#"\n"#.utf8), "\n"), (Array(#"\""#.utf8), "\""), (Array(#"\\"#.utf8), "\\"),
            ([0x7F], "\u{7F}"), ([0x20], " "), (Array("a".utf8), "a"),
        ]
        for before in 0...17 {
            for after in 0...17 {
                for middle in middles {
                    for padding in [0, 9] {
                        let head = String(repeating: "h", count: before)
                        let tail = String(repeating: "t", count: after)
                        let text = [UInt8(ascii: "\"")] + Array(head.utf8) + middle.written + Array(tail.utf8)
                            + [UInt8(ascii: "\"")] + Array(repeating: UInt8(ascii: " "), count: padding)
                        if let read = middle.read {
                            #expect(try JSONValue(parsing: text) == .string(head + read + tail), "\(text)")
                        } else {
                            #expect(throws: JSONParseError.self, "\(text)") { try JSONValue(parsing: text) }
                        }
                    }
                }
            }
        }
    }

    @Test("objects keep every member; a repeated key keeps its last value")
    func objectMembers() throws {
        #expect(try JSONValue(parsing: "{}") == .object([:]))
        #expect(try JSONValue(parsing: #"{"a":1,"b":{"c":[true]},"d":null,"e":"x","f":2.5}"#)
            == ["a": 1, "b": ["c": [true]], "d": .null, "e": "x", "f": 2.5])
        #expect(try JSONValue(parsing: #"{"a":1,"b":2,"a":3}"#) == ["a": 3, "b": 2])
    }

    @Test("escapes decode, surrogate pairs included")
    func decodesEscapes() throws {
        #expect(try JSONValue(parsing: #""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{C}\n\r\t"))
        #expect(try JSONValue(parsing: #""\u00e9\u2713\ud83d\ude00""#) == .string("é✓😀"))
        #expect(try JSONValue(parsing: "\"ünï ✓\"") == .string("ünï ✓"))
    }

    @Test("numbers: whole values are integers, exact up to Int.max; what a Double would change is kept as written; the rest are doubles",
          arguments: [
              ("0", JSONValue.int(0)), ("-0", .int(0)), ("9223372036854775807", .int(Int.max)),
              ("-9223372036854775808", .int(Int.min)), ("2.0", .int(2)), ("1e3", .int(1000)),
              ("0.1", .double(0.1)), ("-2.5E-3", .double(-0.0025)), ("1e300", .double(1e300)),
              ("18446744073709551616", .number(JSONNumber("18446744073709551616")!)),
              ("0.10000000000000000555", .number(JSONNumber("0.10000000000000000555")!)),
              ("123456789012.345", .double(123_456_789_012.345)),
          ])
    func parsesNumbers(text: String, value: JSONValue) throws {
        #expect(try JSONValue(parsing: text) == value)
    }

    @Test("numbers past 64 bits, past 15 significant digits, past Double's range either way or subnormal come back exactly as written",
          arguments: ["18446744073709551615", "-18446744073709551617", "3.14159265358979323846", "1e400", "-1E+400",
                      "0.000000000000000000012345678901234567", "9223372036854775808", "1e-400", "-2.5E-999",
                      "3e-324", "5e-324", "2.225073858507201e-308", "0.00001e-320"])
    func keepsNumbersAsWritten(text: String) throws {
        let value = try JSONValue(parsing: text)
        #expect(value == .number(JSONNumber(text)!))
        #expect(String(decoding: value.serialized(), as: UTF8.self) == text)
        let nested = try JSONValue(parsing: "[\(text),{\"n\":\(text)}]")
        #expect(String(decoding: nested.serialized(), as: UTF8.self) == "[\(text),{\"n\":\(text)}]")
    }

    @Test("zeros however written, and a small normal number, are numbers a Double holds",
          arguments: [("0e-400", JSONValue.int(0)), ("0.000e5", .int(0)), ("-0.0E-999", .int(0)),
                      ("1e-307", .double(1e-307))])
    func zerosAndNormalsAreNotKeptAsWritten(text: String, value: JSONValue) throws {
        #expect(try JSONValue(parsing: text) == value)
    }

    @Test("a JSONNumber is made only from a JSON number's text", arguments: [
        ("1", true), ("-0.5e-3", true), ("1E+2", true), ("", false), ("-", false), ("01", false), ("1.", false),
        (".5", false), ("1e", false), ("+1", false), ("1 ", false), ("NaN", false), ("0x10", false),
    ])
    func numberGrammar(text: String, valid: Bool) {
        #expect((JSONNumber(text) != nil) == valid)
    }

    @Test("whitespace around and between tokens is allowed; the error names the byte offset")
    func whitespaceAndOffsets() throws {
        #expect(try JSONValue(parsing: " \t\r\n{ \"a\" : [ 1 , 2 ] }\n") == ["a": [1, 2]])
        do {
            _ = try JSONValue(parsing: "[1,]")
            Issue.record("parsed")
        } catch {
            #expect(error.offset == 3)
        }
    }
}
