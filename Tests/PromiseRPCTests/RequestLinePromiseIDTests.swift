@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
import Testing

/// The parser marks the param strings it read as printable ASCII without
/// escapes, and `RPCParams` then checks only their length as promise ids.
/// Whatever the id and however its member is written, the answer must be
/// the one the full check gives: params built from a dictionary, which
/// carry no mark, are the oracle.
@Suite("Request lines: promise ids checked as they are read")
struct RequestLinePromiseIDTests {
    /// The params of the one request on `line`.
    private func params(_ line: String) throws -> RPCParams {
        guard case .single(let envelope) = try RequestLine(parsing: Array(line.utf8)) else {
            Issue.record("not one message: \(line)")
            return RPCParams([:])
        }
        return try JSONRPCRequest.check(envelope).params
    }

    /// What the full check makes of the "id" param that the general parser reads on `line`.
    private func oracle(_ line: String) throws -> (required: Result<String, RPCError>, optional: Result<String?, RPCError>) {
        let value = try #require(JSONValue(parsing: line)["params"])
        guard case .object(let members) = value else {
            Issue.record("no params: \(line)")
            return (.failure(RPCError(.internalError, "")), .failure(RPCError(.internalError, "")))
        }
        let params = RPCParams(members)
        return (Result { () throws(RPCError) in try params.promiseID("id") },
                Result { () throws(RPCError) in try params.optionalPromiseID("id") })
    }

    private func expectAgreement(_ line: String, valid: Bool? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let read = try params(line)
        let expected = try oracle(line)
        let required = Result { () throws(RPCError) in try read.promiseID("id") }
        let optional = Result { () throws(RPCError) in try read.optionalPromiseID("id") }
        #expect(required == expected.required, "\(line)", sourceLocation: sourceLocation)
        #expect(optional == expected.optional, "\(line)", sourceLocation: sourceLocation)
        if let valid {
            #expect(((try? required.get()) != nil) == valid, "\(line)", sourceLocation: sourceLocation)
        }
    }

    /// The text of an id as written in JSON (between its quotes), and
    /// whether it is a valid id.
    private static let ids: [(json: String, valid: Bool)] = [
        ("a", true), ("counted.17", true), ("build/lib", true), (" ", true), ("~", true), ("a b", true),
        (String(repeating: "x", count: 7), true), (String(repeating: "x", count: 8), true),
        (String(repeating: "x", count: 9), true), (String(repeating: "y", count: 256), true),
        (String(repeating: "y", count: 257), false), (String(repeating: "y", count: 300), false),
        ("", false),
        // Escaped: checked in full, whatever they stand for.
        (#"a\u0062"#, true), (#"\""#, true), (#"\\"#, true), (#"\/"#, true), (#"\u007f"#, false), (#"\u0001"#, false),
        (#"\n"#, false), (#"\t"#, false), (#"\u00e9"#, true), (#"\ud83d\ude00"#, true), (#"\u2028"#, false),
        (#"\ue000"#, false),
        // Not ASCII, written as is.
        ("é", true), ("ids/é/x", true), ("\u{2028}", false), ("a\u{2029}bcdefghij", false), ("\u{E000}", false),
        ("😀", true),
        // 256 bytes with a last character of two bytes: 257.
        (String(repeating: "y", count: 255) + "é", false), (String(repeating: "y", count: 254) + "é", true),
        // DEL (0x7F) written as is, which JSON allows and ids do not, at each place of an 8-byte word and past it.
    ] + (0..<20).map { (String(repeating: "d", count: $0) + "\u{7F}" + String(repeating: "d", count: 19 - $0), false) }
        + [("\u{7F}", false), ("abcdefg\u{7F}", false)]

    @Test("an id is valid, or refused with the same error, as the full check says, however its member is placed")
    func idsAgreeWithFullCheck() throws {
        for (json, valid) in Self.ids {
            for line in [
                #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":"\#(json)"}}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"value":1,"id":"\#(json)"}}"#,
                #"{"jsonrpc":"2.0","id":1,"method":"get","params":{ "id" : "\#(json)" , "x" : [] }}"#,
                #"{"params":{"i\u0064":"\#(json)"},"jsonrpc":"2.0","method":"get"}"#,
                #"{"jsonrpc":"2.0","method":"get","params":{"id":"\#(json)"}}"#,
            ] {
                try expectAgreement(line, valid: valid)
            }
        }
    }

    @Test("of a repeated id, the last counts, whether it or the one before is marked")
    func repeatedIDs() throws {
        for (first, last) in [("good", #"\u007f"#), (#"\u007f"#, "good"), ("good", "\u{7F}"), ("\u{7F}", "good"),
                              ("good", ""), ("", "good"), ("good", "é"), ("a", "b")] {
            try expectAgreement(#"{"jsonrpc":"2.0","method":"get","params":{"id":"\#(first)","x":1,"id":"\#(last)"}}"#)
            try expectAgreement(#"{"jsonrpc":"2.0","method":"get","params":{"id":"\#(first)","id":"\#(last)"}}"#)
        }
    }

    @Test("ids among many params (indexed from the 9th) are checked as the full check says",
          arguments: [3, 8, 9, 63, 64, 65, 100])
    func idsAmongManyParams(position: Int) throws {
        for (json, valid) in [("good", true), ("\u{7F}", false), (#"\u0001"#, false), ("", false), ("é", true)] {
            let before = (0..<position).map { #""p\#($0)":"v\#($0)""# }
            let line = #"{"jsonrpc":"2.0","method":"get","params":{"# + (before + [#""id":"\#(json)""#]).joined(separator: ",")
                + "}}"
            try expectAgreement(line, valid: valid)
        }
    }

    @Test("an id that is not a string, or null, reads as the full check says")
    func idsThatAreNotStrings() throws {
        for value in ["1", "null", "true", "[]", #"{"id":"a"}"#, #"["a"]"#] {
            try expectAgreement(#"{"jsonrpc":"2.0","method":"get","params":{"id":\#(value)}}"#, valid: false)
        }
        try expectAgreement(#"{"jsonrpc":"2.0","method":"get","params":{"other":"a"}}"#, valid: false)
    }

    @Test("a marked string is still the string: other params read as they were sent")
    func markedStringsReadAsSent() throws {
        let read = try params(#"{"jsonrpc":"2.0","method":"get","params":{"id":"a b","name":"\u0041","s":"~\u007f"}}"#)
        #expect(try read.promiseID("id") == "a b")
        #expect(try read.string("name") == "A")
        #expect(try read.string("s") == "~\u{7F}")
        #expect(throws: RPCError.self) { try read.promiseID("s") }
        #expect(read["id"] == "a b")
    }
}
