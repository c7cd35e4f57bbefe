@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
import Testing

/// `RequestLine` reads the envelope straight from the bytes; the general
/// parser (`JSONValue(parsing:)`, then `JSONRPCEnvelope(_:)`) is the oracle
/// it must agree with on every line: the same envelope, or the same error at
/// the same byte.
@Suite("Request lines: the envelope read without a dictionary")
struct RequestLineTests {
    /// What the general parser makes of `line`.
    private func oracle(_ line: [UInt8]) -> Result<RequestLine, JSONParseError> {
        RequestLineOracle.general(line)
    }

    private func read(_ line: [UInt8]) -> Result<RequestLine, JSONParseError> {
        RequestLineOracle.read(line)
    }

    private static let lines = [
        #"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"a","lease":true}}"#,
        #" { "method" : "get" , "params" : { "id" : "a" } , "id" : "x" , "jsonrpc" : "2.0" } "#,
        #"{"jsonrpc":"2.0","method":"info"}"#,
        #"{"jsonrpc":"2.0","id":null,"method":"info","params":null}"#,
        #"{"\u0069d":2,"json\u0072pc":"2.0","method":"get","params":{"id":"b"}}"#,
        #"{"id":1,"id":2,"method":"a","method":"b","jsonrpc":"1.0","jsonrpc":"2.0"}"#,
        #"{"extra":[1,{"deep":[true,false,null]}],"idx":1,"i":2,"methods":3,"paramz":4,"jsonrpc":"2.0","method":"info"}"#,
        #"{"é":1,"mé":"ü","jsonrpc":"2.0","method":"info"}"#,
        #"{"id":{"an":"object"},"jsonrpc":"2.0","method":"info"}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"id":"a","value":{"n":1.5e3,"s":"\n\"\\"}}}"#,
        #"[{"jsonrpc":"2.0","id":1,"method":"info"},1,"x",[],{},{"method":"get"}]"#,
        #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":"a","id":"b","x":{}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":"a"},"params":[1]}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"get","params":7,"params":{"id":"c"}}"#,
        #"{"params":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"a":9,"i":{"j":[10]}},"jsonrpc":"2.0","method":"list"}"#,
        // The strings read as literals ("2.0", common method and param names),
        // escaped, cut short, run on, and as values of other members.
        #"{"jsonrpc":"2\u002e0","id":3,"method":"re\u0073olve","params":{"i\u0064":"a","valu":1,"values":2,"value":3,"reason":"r"}}"#,
        #"{"jsonrpc":"2.00","id":"id","method":"resolved","params":{"get":"wait","wait":"get","create":"reject","reject":"2.0","id":"value"}}"#,
        #"{"jsonrpc":"2.","id":4,"method":"creat","params":{"":"","i":"id","ids":["id","value"],"é":"create"}}"#,
        #"{"jsonrpc":"2.0","id":5,"method":"wait","params":{"id":"valueX"}}"#,
        #"[]"#,
        #"{}"#,
        #""just a string""#,
        #"42"#,
        #"null"#,
    ]

    @Test("well-formed lines read as the general parser reads them")
    func agreesOnLines() throws {
        RequestLineOracle.expectAgreement(on: Self.lines)
    }

    @Test("every prefix and every one-byte change of those lines fails or reads as the general parser says")
    func agreesOnDamagedLines() {
        let checked = RequestLineOracle.expectAgreementWhenDamaged(
            Self.lines, replacements: [0x00, 0x1F, 0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x2C, 0x3A, 0xFF, 0xC3])
        #expect(checked > 5_000)
    }

    @Test("a repeated param reads as its last value, among few params and among many",
          arguments: [2, 8, 9, 40])
    func repeatedParamReadsLast(count: Int) throws {
        let others = (0..<count).map { #""p\#($0)":\#($0)"# }
        let line = #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":"first","#
            + others.joined(separator: ",") + #","id":"last","p0":"again"}}"#
        guard case .single(let envelope) = try RequestLine(parsing: Array(line.utf8)) else {
            Issue.record("not one message")
            return
        }
        let params = try JSONRPCRequest(envelope).namedParams
        #expect(params["id"] == "last")
        #expect(params["p0"] == "again")
        #expect(params["p\(count - 1)"] == .int(count - 1))
        #expect(params["missing"] == nil)
        #expect(params.members.count == count + 1)
        #expect(params.depth == 1)
    }

    @Test("each short word is the word of its text", arguments: [
        ("id", ShortWord.id), ("2.0", ShortWord.version), ("get", ShortWord.get), ("wait", ShortWord.wait),
        ("value", ShortWord.value), ("create", ShortWord.create), ("reject", ShortWord.reject),
        ("reason", ShortWord.reason), ("resolve", ShortWord.resolve), ("jsonrpc", ShortWord.jsonrpc),
        ("method", ShortWord.method), ("params", ShortWord.params),
    ])
    func shortWords(text: String, word: UInt64) {
        #expect(Array(text.utf8).withUnsafeBufferPointer(JSONParser.word) == word)
    }

    @Test("keys and common strings are read alike with 8 bytes after them and with fewer (the line's end)")
    func wordsNearTheEnd() throws {
        // Each key and string here is followed by fewer than 8 bytes, then
        // padded with spaces so that it is followed by more: both reads of
        // its bytes must tell the same member and value.
        let lines = [
            #"{"jsonrpc":"2.0","method":"info","id":1}"#,
            #"{"id":1,"method":"info","jsonrpc":"2.0"}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"get"}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"x","params":{"value":1}}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"x","params":{"a":"resolve"}}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"x","params":{"a":"resolv"}}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"x","params":{"a":"resolvf"}}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"x","params":{"idd":1}}"#,
            #"{"i":1,"jsonrpc":"2.0","method":"x","param":{}}"#,
            #"{"id":1,"jsonrp":"2.0","jsonrpcc":"2.0","method":"x","paramsX":{}}"#,
        ]
        for line in lines {
            for padding in [0, 8] {
                let bytes = Array((line.dropLast() + String(repeating: " ", count: padding) + "}").utf8)
                let read = read(bytes)
                #expect(read == oracle(bytes), "\(line) padded by \(padding)")
                #expect((try? read.get()) != nil, "\(line) padded by \(padding)")
            }
        }
    }

    @Test("the envelope of a request names its four members and drops the rest")
    func picksOutEnvelope() throws {
        let line = try RequestLine(parsing: Array(#"{"other":1,"id":"r","jsonrpc":"2.0","method":"get","params":{"id":"a"}}"#.utf8))
        #expect(line == .single(JSONRPCEnvelope(id: "r", jsonrpc: "2.0", method: "get", params: ["id": "a"])))
    }

    @Test("a key that is not valid UTF-8, or holds a raw control character, is a parse error")
    func refusesBadKeys() {
        for bytes: [UInt8] in [
            [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D],  // {"\xFF":1}
            [0x7B, 0x22, 0x69, 0x01, 0x22, 0x3A, 0x31, 0x7D],  // {"i\u{1}":1}
            Array(#"{"i\d":1}"#.utf8),
        ] {
            #expect(throws: JSONParseError.self) { try RequestLine(parsing: bytes) }
        }
    }

    @Test("nesting deeper than 512 levels is refused, in a request's params as anywhere")
    func refusesDeepNesting() throws {
        func line(depth: Int) -> [UInt8] {
            // The request object is level 1, "params" level 2.
            let inner = String(repeating: "[", count: depth - 2) + String(repeating: "]", count: depth - 2)
            return Array(#"{"jsonrpc":"2.0","method":"info","params":{"x":\#(inner)}}"#.utf8)
        }
        #expect(throws: Never.self) { try RequestLine(parsing: line(depth: 512)) }
        #expect(throws: JSONParseError.self) { try RequestLine(parsing: line(depth: 513)) }
    }
}
