@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
import PromiseTestSupport
import Testing

/// The dispatcher reads the id of a `resolve` or `reject` as bytes left in
/// the line (`LentPromiseID`) when it is a valid id of 16 bytes or more,
/// written without escapes. Whatever the line, the id it names must be the
/// one the full reading gives (the general parser, then the params' own
/// check), and the params must hold no other "id".
@Suite("Request lines: ids of resolve and reject lent from the line")
struct RequestLineLentIDTests {
    /// What the dispatcher reads of the one request on `line`: the id lent
    /// (as text), and the id its params name.
    private func read(_ line: String) throws -> (lent: String?, params: Result<String, RPCError>) {
        var spare: [RPCParams.Pair]?
        return try Array(line.utf8).withUnsafeBytes { bytes in
            guard case .single(let envelope) = try RequestLine(parsing: bytes, reusing: &spare, lendingIDs: true) else {
                Issue.record("not one message: \(line)")
                return (nil, .failure(RPCError(.internalError, "")))
            }
            let (_, _, params, lentID) = try JSONRPCRequest.check(envelope)
            // Made into a String here, while the line's bytes are still there.
            return (lentID.map { String(decoding: $0.bytes, as: UTF8.self) },
                    Result { () throws(RPCError) in try params.promiseID("id") })
        }
    }

    /// The id the full reading finds on `line`.
    private func oracle(_ line: String) throws -> Result<String, RPCError> {
        guard case .object(let members)? = try JSONValue(parsing: line)["params"] else {
            Issue.record("no params: \(line)")
            return .failure(RPCError(.internalError, ""))
        }
        let params = RPCParams(members)
        return Result { () throws(RPCError) in try params.promiseID("id") }
    }

    private static let long = "cpinned.r3.12-100000"

    @Test("a valid id of 16 bytes or more, written compactly, is lent and left out of the params",
          arguments: ["resolve", "reject"], [long, String(repeating: "x", count: 16), String(repeating: "y", count: 256),
                                             "build/lib/with a space~"])
    func lent(method: String, id: String) throws {
        let line = #"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":{"id":"\#(id)","value":1}}"#
        let (lent, params) = try read(line)
        #expect(lent == id)
        #expect(throws: RPCError.self) { try params.get() }
        #expect(try oracle(line).get() == id)
    }

    @Test("any other id, or way of writing it, is read into the params as before", arguments: [
        // Short: a String with no allocation.
        #""id":"counted.17""#, #""id":"\#(String(repeating: "x", count: 15))""#,
        // Too long, empty, escaped, not printable, not ASCII, not a string.
        #""id":"\#(String(repeating: "y", count: 257))""#, #""id":"""#,
        #""id":"cpinned.r3.12-\u0031000000""#, #""id":"cpinned.r3.12-10\/0000""#,
        "\"id\":\"cpinned.r3.12-1000\u{7F}00\"", #""id":"cpinned.r3.12-10000é""#, #""id":1234567890123456789"#,
        // The key not written as most clients write it.
        #""id" :"cpinned.r3.12-100000""#, #""\u0069d":"cpinned.r3.12-100000""#,
    ])
    func notLent(member: String) throws {
        let line = #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{\#(member),"value":1}}"#
        let (lent, params) = try read(line)
        #expect(lent == nil)
        #expect(params == (try oracle(line)))
    }

    @Test("ids of every length around the 8-byte steps are lent; DEL or a byte past ASCII anywhere in one is not")
    func everyLengthAndPosition() throws {
        for length in 16...41 {
            let id = printableText(count: length)
            let line = #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"id":"\#(id)"}}"#
            #expect(try read(line).lent == id, "\(line)")
            for position in [0, 7, 8, 15, length - 1] {
                for odd in ["\u{7F}", "é"] {
                    var scalars = Array(id)
                    scalars[position] = Character(odd)
                    let line = #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"id":"\#(String(scalars))"}}"#
                    let (lent, params) = try read(line)
                    #expect(lent == nil, "\(line)")
                    #expect(params == (try oracle(line)), "\(line)")
                }
            }
        }
    }

    @Test("no id is lent for other methods, or when the method comes after the params")
    func onlyResolveAndRejectNamedFirst() throws {
        for line in [
            #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":"\#(Self.long)"}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"\#(Self.long)"}}"#,
            #"{"jsonrpc":"2.0","id":1,"params":{"id":"\#(Self.long)"},"method":"resolve"}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"id":"\#(Self.long)"},"method":"get"}"#,
        ] {
            let (lent, params) = try read(line)
            #expect(lent == nil, "\(line)")
            #expect(try params.get() == Self.long, "\(line)")
        }
    }

    @Test("of a repeated id, the last counts, lent or not")
    func repeatedID() throws {
        let other = "other.id.of.17.bytes"
        let cases: [(members: String, expected: String)] = [
            (#""id":"\#(Self.long)","id":"\#(other)""#, other),
            (#""id":"short","id":"\#(Self.long)""#, Self.long),
            (#""id":"\#(Self.long)","id":"short""#, "short"),
            (#""id":"\#(Self.long)","id" : "short""#, "short"),
            (#""id":"\#(Self.long)","id":"bad\u0001id-of-16-bytes""#, "bad\u{1}id-of-16-bytes"),
        ]
        for (members, expected) in cases {
            let line = #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{\#(members)}}"#
            let (lent, params) = try read(line)
            let full = try oracle(line)
            // The one the full reading names, or the same refusal.
            if let lent {
                #expect(lent == expected, "\(line)")
                #expect(try full.get() == lent, "\(line)")
                #expect(throws: RPCError.self, "\(line)") { try params.get() }
            } else {
                #expect(params == full, "\(line)")
                if case .success(let id) = full { #expect(id == expected, "\(line)") }
            }
        }
    }

    @Test("an id lent from params that a later params member replaces is dropped")
    func repeatedParams() throws {
        let line = #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"id":"\#(Self.long)"},"params":{"id":"short"}}"#
        let (lent, params) = try read(line)
        #expect(lent == nil)
        #expect(try params.get() == "short")
    }

    @Test("each request of a batch has its own id lent")
    func batch() throws {
        let ids = (0..<3).map { "batch.member.id.\($0)" }
        let line = "[" + ids.map { #"{"jsonrpc":"2.0","id":1,"method":"reject","params":{"id":"\#($0)"}}"# }
            .joined(separator: ",") + "]"
        var spare: [RPCParams.Pair]?
        let lent = try Array(line.utf8).withUnsafeBytes { bytes in
            guard case .batch(let members) = try RequestLine(parsing: bytes, reusing: &spare, lendingIDs: true) else {
                return [String?]()
            }
            return try members.map { member in
                try JSONRPCRequest.check(member).lentID.map { String(decoding: $0.bytes, as: UTF8.self) }
            }
        }
        #expect(lent == ids)
    }

    @Test("without lendingIDs, nothing is lent")
    func notAskedToLend() throws {
        let line = #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"id":"\#(Self.long)"}}"#
        guard case .single(let envelope) = try RequestLine(parsing: Array(line.utf8)) else {
            Issue.record("not one message")
            return
        }
        let parts = try JSONRPCRequest.check(envelope)
        #expect(parts.lentID == nil)
        #expect(try parts.params.promiseID("id") == Self.long)
    }
}
