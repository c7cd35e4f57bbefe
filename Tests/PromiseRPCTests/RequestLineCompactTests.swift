@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
import Testing

/// `RequestLine` compares the envelope's keys, `"2.0"` and small whole
/// numbers with the bytes most clients send, 8 at a time, and reads
/// anything else the general way. Every way of writing them must read as
/// the general parser reads it (see ``RequestLineOracle``).
@Suite("Request lines: keys and numbers as most clients write them")
struct RequestLineCompactTests {
    @Test("each compact text is the load of its bytes", arguments: [
        (#""id":"#, CompactText.idKey), (#""method""#, CompactText.methodKey), (#""params""#, CompactText.paramsKey),
        (#""jsonrpc"#, CompactText.jsonrpcKey), (#""2.0""#, CompactText.version), (#""value":"#, CompactText.valueKey),
    ])
    func compactTexts(text: String, word: UInt64) {
        let padded = Array(text.utf8) + [UInt8](repeating: 0, count: 8 - text.utf8.count)
        #expect(padded.withUnsafeBufferPointer { ByteLanes.load($0, at: 0) } == word)
    }

    private static let lines = [
        // Keys with space or an escape before their colon, or cut short, or run on.
        #"{"id" :1,"jsonrpc" :"2.0","method" :"get","params" :{"id":"a"}}"#,
        #"{"id""# + "\t" + #":1,"jsonrpc""# + "\r\n" + #":"2.0","method"  :"get","params"   :{"id":"a"}}"#,
        #"{"i\u0064":1,"jsonrp\u0063":"2.0","metho\u0064":"get","param\u0073":{"id":"a"}}"#,
        #"{"ids":1,"jsonrpcs":"2.0","methods":"get","paramss":{},"jsonrpc":"2.0","method":"info"}"#,
        #"{"idx":1,"jsonrpc_":"2.0","method_":"get","params_":{},"jsonrpc":"2.0","method":"info"}"#,
        #"{"i":1,"jsonrp":"2.0","metho":"get","param":{},"jsonrpc":"2.0","method":"info"}"#,
        // Param keys: "id" and "value" compact, spaced, escaped, near misses, repeated, at the line's end.
        #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"value" :1,"id" :"a","valuex":2,"id":"b","value":3}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"value":1,"ids":"x","id":"a","values":4,"valu":5}}"#,
        #"{"jsonrpc":"2.0","method":"get","params":{"id":"a","value":{"id":"b","value":[]}}}"#,
        #"{"params":{"id":1},"jsonrpc":"2.0","method":"get"}"#,
        #"{"jsonrpc":"2.0","method":"get","params":{"value":1}}"#,
        #"{"jsonrpc":"2.0","method":"get","params":{"id":1}}"#,
        // "2.0" and versions like it.
        #"{"jsonrpc":"2.0 ","method":"info"}"#,
        #"{"jsonrpc":"2.00","method":"info"}"#,
        #"{"jsonrpc":"2.0","jsonrpc":"2.1","method":"info"}"#,
        #"{"jsonrpc": "2.0","method":"info"}"#,
        #"{"jsonrpc":2.0,"method":"info"}"#,
        // Numbers: small and not, signed, with fractions and exponents, at the line's end.
        #"{"jsonrpc":"2.0","id":0,"method":"get","params":{"id":"a","value":7}}"#,
        #"{"jsonrpc":"2.0","id":123456789012345678,"method":"get","params":{"value":999999999999999999}}"#,
        #"{"jsonrpc":"2.0","id":1234567890123456789,"method":"get","params":{"value":9223372036854775807}}"#,
        #"{"jsonrpc":"2.0","id":12345678901234567890,"method":"get","params":{"value":-9223372036854775808}}"#,
        #"{"jsonrpc":"2.0","id":-1,"method":"get","params":{"a":1.5,"b":1e3,"c":1E2,"d":10.0,"e":2e-1,"f":-0}}"#,
        #"{"jsonrpc":"2.0","id":10,"method":"get","params":{"a":100000000000000000000000,"b":[1,22,333]}}"#,
        #"{"method":"get","jsonrpc":"2.0","id":42}"#,
        #"[1,2,{"jsonrpc":"2.0","id":3,"method":"info"},40]"#,
        #"7"#,
        #"70"#,
    ]

    @Test("keys, versions and numbers written any way read as the general parser reads them")
    func agreesOnLines() {
        RequestLineOracle.expectAgreement(on: Self.lines)
    }

    @Test("every prefix and every one-byte change of those lines fails or reads as the general parser says")
    func agreesOnDamagedLines() {
        let checked = RequestLineOracle.expectAgreementWhenDamaged(
            Self.lines, replacements: [0x00, 0x20, 0x22, 0x30, 0x2E, 0x3A, 0x45, 0x65, 0x2D, 0x7D, 0xFF])
        #expect(checked > 10_000)
    }

    @Test("small whole numbers are ints, as the general parser makes them", arguments: [
        ("1", 1), ("9", 9), ("10", 10), ("42", 42), ("123456789012345678", 123_456_789_012_345_678),
        ("999999999999999999", 999_999_999_999_999_999), ("1000000000000000000", 1_000_000_000_000_000_000),
    ])
    func smallIntegers(text: String, value: Int) throws {
        #expect(try JSONValue(parsing: text) == .int(value))
        #expect(try JSONValue(parsing: "[\(text)]") == [.int(value)])
    }

    @Test("a number that starts like a small one but is not one is refused or read in full", arguments: [
        "01", "1.", "1e", "1.5", "1e3", "1E3", "12x", "1-", "00",
    ])
    func notSmallIntegers(text: String) {
        let line = Array("[\(text)]".utf8)
        let general = Result { () throws(JSONParseError) -> JSONValue in try JSONValue(parsing: line) }
        switch text {
        case "1.5": #expect(general == .success([.double(1.5)]))
        case "1e3", "1E3": #expect(general == .success([.int(1000)]))
        default: #expect(throws: JSONParseError.self) { try general.get() }
        }
    }
}
