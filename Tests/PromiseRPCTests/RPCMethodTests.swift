@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
import Testing

/// The parser tells a request's method from the bytes of its name; however
/// it is written, a method must come out as the same ``RPCMethod`` (or the
/// same unknown name). The dispatcher's side is in PromiseDispatchTests.
@Suite("Methods told from their bytes")
struct RPCMethodTests {
    @Test("each method word is the word of its name", arguments: [
        ("cancel", MethodWord.cancel), ("list", MethodWord.list), ("then", MethodWord.then), ("all", MethodWord.all),
        ("any", MethodWord.any), ("race", MethodWord.race), ("info", MethodWord.info), ("forget", MethodWord.forget),
        ("logs", MethodWord.logs), ("log", MethodWord.log), ("lease", MethodWord.lease),
    ])
    func methodWords(text: String, word: UInt64) {
        #expect(Array(text.utf8).withUnsafeBufferPointer(JSONParser.word) == word)
    }

    @Test("a method told by its word is the one its name names, for every name of at most 7 bytes")
    func wordsAgreeWithNames() {
        for method in RPCMethod.allCases {
            let word = Array(method.rawValue.utf8).withUnsafeBufferPointer { bytes in
                bytes.count <= 8 ? JSONParser.word(bytes) : 0
            }
            let expected: RPCMethod? = method.rawValue.utf8.count <= 7 ? method : nil
            #expect(RPCMethod(word: word) == expected, "\(method)")
        }
        // Words close to a method's, and the empty word.
        for text in ["creat", "creates", "Create", "get ", "lo", "logs2", "pool.se", ""] {
            let word = Array(text.utf8).withUnsafeBufferPointer(JSONParser.word)
            #expect(RPCMethod(word: word) == nil, "\(text)")
        }
    }

    @Test("the methods refused while the store cannot write are those that change what it keeps")
    func changingMethods() {
        let changing: Set<String> = [
            "create", "resolve", "reject", "cancel", "then", "progress", "all", "any", "race", "allSettled", "forget",
            "lease", "cancelPrefix", "log", "pool.set",
        ]
        for method in RPCMethod.allCases {
            #expect(method.changesStoredState == changing.contains(method.rawValue), "\(method)")
        }
    }

    /// The method the dispatcher is given for `line`, or the rejection.
    private func method(of line: String) throws -> Result<RequestedMethod, JSONRPCRequest.Rejection> {
        guard case .single(let envelope) = try RequestLine(parsing: Array(line.utf8)) else {
            Issue.record("not one message: \(line)")
            return .failure(JSONRPCRequest.Rejection(id: .null, error: RPCError(.internalError, "batch")))
        }
        return Result { () throws(JSONRPCRequest.Rejection) in try JSONRPCRequest.check(envelope).method }
    }

    @Test("a method is the same known method however it is written, and near the line's end",
          arguments: RPCMethod.allCases)
    func knownMethodHoweverWritten(known: RPCMethod) throws {
        let name = known.rawValue
        let escaped = name.unicodeScalars.map { #"\u"# + String(repeating: "0", count: 4 - String($0.value, radix: 16).count)
            + String($0.value, radix: 16) }.joined()
        for line in [
            #"{"jsonrpc":"2.0","id":1,"method":"\#(name)","params":{"id":"a"}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"\#(escaped)","params":{"id":"a"}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"\#(name)"}"#,
            #"{"jsonrpc":"2.0","method":"\#(name)"}"#,
            #"{ "method" : "\#(name)" , "jsonrpc" : "2.0" }"#,
            #"{"method":"nope","method":"\#(name)","jsonrpc":"2.0"}"#,
            #"{"method":7,"method":"\#(name)","jsonrpc":"2.0"}"#,
        ] {
            #expect(try method(of: line) == .success(.known(known)), "\(line)")
        }
    }

    @Test("a name that is not a method's, or a method that is not a string, is read as sent", arguments: [
        (#"{"jsonrpc":"2.0","method":"creat"}"#, "creat"),
        (#"{"jsonrpc":"2.0","method":"createX"}"#, "createX"),
        (#"{"jsonrpc":"2.0","method":"Create"}"#, "Create"),
        (#"{"jsonrpc":"2.0","method":"create ","id":1}"#, "create "),
        (#"{"jsonrpc":"2.0","method":"pool.sets"}"#, "pool.sets"),
        (#"{"jsonrpc":"2.0","method":"cr\u00e9ate"}"#, "cr\u{E9}ate"),
        (#"{"jsonrpc":"2.0","method":"create","method":"get2"}"#, "get2"),
        (#"{"jsonrpc":"2.0","method":""}"#, ""),
    ])
    func unknownMethods(line: String, name: String) throws {
        #expect(try method(of: line) == .success(.unknown(name)), "\(line)")
    }

    @Test("a method that is not a string is refused, whatever came before it", arguments: [
        #"{"jsonrpc":"2.0","id":1,"method":7}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"create","method":null}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"create","method":["create"]}"#,
        #"{"jsonrpc":"2.0","id":1}"#,
    ])
    func nonStringMethods(line: String) throws {
        #expect(try method(of: line) == .failure(JSONRPCRequest.Rejection(
            id: 1, error: RPCError(.invalidRequest, "\"method\" must be a string"))))
    }
}
