import PromiseJSON
import Testing

@Suite("JSONValue: parsing and serialization")
struct JSONValueTests {
    @Test("each JSON kind parses to its case; integers stay integers",
          arguments: [
              ("null", JSONValue.null), ("true", .bool(true)), ("false", .bool(false)),
              ("0", .int(0)), ("1", .int(1)), ("-42", .int(-42)), ("9007199254740993", .int(9_007_199_254_740_993)),
              ("1.5", .double(1.5)), ("1e3", .int(1000)), ("2.5e-1", .double(0.25)), ("\"x\"", .string("x")),
              ("[1,\"a\",null]", .array([1, "a", nil])), ("{\"a\":{\"b\":[]}}", .object(["a": ["b": []]])),
          ])
    func parses(text: String, value: JSONValue) throws {
        #expect(try JSONValue(parsing: text) == value)
    }

    @Test("numbers are never read as booleans, nor booleans as numbers")
    func noBoolNumberConfusion() throws {
        #expect(try JSONValue(parsing: "1") == .int(1))
        #expect(try JSONValue(parsing: "0") == .int(0))
        #expect(try JSONValue(parsing: "true") == .bool(true))
        #expect(try JSONValue(parsing: "[1,true]") == [1, true])
    }

    @Test("text that is not one JSON value is refused",
          arguments: ["", "{", "{\"a\":}", "nul", "1 2", "{'a':1}", "NaN", "\"unterminated"])
    func refuses(text: String) {
        #expect(throws: (any Error).self) { try JSONValue(parsing: text) }
    }

    @Test("integers are written in decimal, with every digit, from Int.min to Int.max")
    func writesIntegers() {
        var numbers = [0, 1, 9, 10, 11, 19, 99, 100, 101, 109, 110, 999, 1_000, 1_001, 12_345, 1_764_000_000_000,
                       1_764_000_000_001, Int.max, Int.max - 1, Int.min, Int.min + 1]
        var power = 1
        while power <= Int.max / 10 {
            power *= 10
            numbers += [power - 1, power, power + 1]
        }
        let negated = numbers.filter { $0 != Int.min }.map { -$0 }
        for number in numbers + negated {
            #expect(JSONValue.int(number).serialized() == Array(String(number).utf8), "\(number)")
        }
    }

    @Test("serialization is compact with sorted keys, and escapes what JSON requires")
    func serializes() {
        let value: JSONValue = ["b": [1, 2.5, nil, true], "a": "quote\" backslash\\ newline\n tab\t bell\u{7}"]
        #expect(value.description == #"{"a":"quote\" backslash\\ newline\n tab\t bell\u0007","b":[1,2.5,null,true]}"#)
    }

    @Test("a string is escaped the same whatever it holds where: each kind of character at every place, before and after the 8-byte steps")
    func escapesByPlace() throws {
        /// RFC 8259's escapes, a character at a time.
        func escaped(_ text: String) -> String {
            text.unicodeScalars.map { scalar -> String in
                switch scalar {
                case "\"": #"\""#
                case "\\": #"\\"#
                case "\n": #"\n"#
                case "\r": #"\r"#
                case "\t": #"\t"#
                case "\u{0}"..."\u{1F}": "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
                default: String(scalar)
                }
            }.joined()
        }
        let middles = ["\"", "\\", "\n", "\u{1}", "\u{1F}", "é", "\u{7F}", " ", "a", ""]
        for before in 0...17 {
            for after in 0...17 {
                for middle in middles {
                    let text = String(repeating: "h", count: before) + middle + String(repeating: "t", count: after)
                    let written = String(decoding: JSONValue.string(text).serialized(), as: UTF8.self)
                    #expect(written == "\"" + escaped(text) + "\"", "\(text.debugDescription)")
                    #expect(try JSONValue(parsing: written) == .string(text))
                }
            }
        }
    }

    @Test("serialized text parses back to the same value")
    func roundTrip() throws {
        let value: JSONValue = ["id": "ünï ✓", "n": -7, "x": 0.1, "list": [[], [:], ["k": nil]], "ok": false]
        #expect(try JSONValue(parsing: value.serialized()) == value)
    }

    @Test("integers are written in full, from Int.min to Int.max",
          arguments: [(0, "0"), (7, "7"), (-7, "-7"), (10, "10"), (1_795_454_472_776, "1795454472776"),
                      (Int.max, "9223372036854775807"), (Int.min, "-9223372036854775808")])
    func integers(value: Int, text: String) {
        #expect(JSONValue.int(value).description == text)
    }

    @Test("non-finite doubles are written as null")
    func nonFinite() {
        #expect(JSONValue.double(.infinity).description == "null")
        #expect(JSONValue.double(.nan).description == "null")
    }

    @Test("accessors read only their own kind")
    func accessors() {
        let value: JSONValue = ["s": "x", "i": 3, "d": 2.0, "f": 2.5, "b": true, "a": [1], "o": [:]]
        #expect(value["s"]?.stringValue == "x")
        #expect(value["i"]?.intValue == 3)
        #expect(value["d"]?.intValue == 2)
        #expect(value["f"]?.intValue == nil)
        #expect(value["i"]?.doubleValue == 3)
        #expect(value["b"]?.boolValue == true)
        #expect(value["s"]?.intValue == nil)
        #expect(value["a"]?.arrayValue == [1])
        #expect(value["o"]?.objectValue == [:])
        #expect(value["missing"] == nil)
        #expect(JSONValue.array([1])["key"] == nil)
    }
}
