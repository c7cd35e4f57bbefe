import Promise
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

@Suite("RPC: request parsing, responses, reasons, ids")
struct RPCEnvelopeUnitTests {
    @Test("a request reads id, method and params")
    func request() throws {
        let request = try JSONRPCRequest(JSONValue(parsing: #"{"jsonrpc":"2.0","id":7,"method":"get","params":{"id":"a"}}"#))
        #expect(request.id == 7)
        #expect(request.method == "get")
        #expect(request.params == ["id": "a"])
        #expect(!request.isNotification)
    }

    @Test("params find each member, and only those, among few members and among many", arguments: [1, 4, 5, 12])
    func paramsLookup(count: Int) throws {
        var members: [String: JSONValue] = [:]
        for index in 0..<count { members["key\(index)"] = .int(index) }
        members["id"] = "a"
        let params = RPCParams(members)
        for index in 0..<count { #expect(params["key\(index)"] == .int(index)) }
        #expect(try params.promiseID("id") == "a")
        #expect(params["key\(count)"] == nil)
        #expect(params["Id"] == nil)
        #expect(try params.optionalPromiseID("parent") == nil)
    }

    @Test("a request without id is a notification; bad params of a notification are marked so")
    func notification() throws {
        let request = try JSONRPCRequest(JSONValue(parsing: #"{"jsonrpc":"2.0","method":"info"}"#))
        #expect(request.isNotification)
        #expect(throws: JSONRPCRequest.Rejection(
            id: .null, notification: true, error: RPCError(.invalidParams, "\"params\" must be an object (named params)"))
        ) {
            try JSONRPCRequest(JSONValue(parsing: #"{"jsonrpc":"2.0","method":"info","params":[1]}"#))
        }
    }

    @Test("responses and notifications have the JSON-RPC 2.0 shape")
    func responses() {
        #expect(JSONRPCResponse.result(1, true).description == #"{"id":1,"jsonrpc":"2.0","result":true}"#)
        #expect(JSONRPCResponse.error("x", RPCError(.noSuchPromise, "no")).description
                == #"{"error":{"code":-32001,"message":"no"},"id":"x","jsonrpc":"2.0"}"#)
        #expect(JSONRPCResponse.notification("settled", ["id": "a"]).description
                == #"{"jsonrpc":"2.0","method":"settled","params":{"id":"a"}}"#)
    }

    @Test("reasons map core errors clearly")
    func reasons() {
        #expect(RemoteRejection(describing: CancellationError()).json == ["message": "cancelled"])
        #expect(RemoteRejection(describing: PromiseError.timedOut).json == ["code": -32005, "message": "timed out"])
        #expect(RemoteRejection(describing: PromiseError.emptyInput).message == "no input promises")
        let rejection = RemoteRejection(code: 2, message: "m", data: [1])
        #expect(RemoteRejection(describing: rejection) == rejection)
        #expect(RemoteRejection(describing: RPCError(.noSuchPromise, "gone")).code == -32001)
        let aggregate = AggregateError(failures: [(index: 1, error: RemoteRejection(message: "x"))])
        #expect(RemoteRejection(describing: aggregate, inputIDs: ["a", "b"]).json == [
            "message": "1 of 2 input promises were rejected",
            "data": ["errors": [["index": 1, "id": "b", "reason": ["message": "x"]]]],
        ])
    }

    @Test("reasons read from params: object, string, or -32602")
    func reasonParsing() throws {
        #expect(try RemoteRejection(json: "text") == RemoteRejection(message: "text"))
        #expect(try RemoteRejection(json: ["message": "m", "code": 3.0, "data": nil]) == RemoteRejection(code: 3, message: "m"))
        for bad: JSONValue in [1, [:], ["message": 1], ["message": "m", "code": 1.5], []] {
            #expect(throws: RPCError.self) { try RemoteRejection(json: bad) }
        }
    }

    @Test("ids: printable, 1 to 256 bytes")
    func ids() {
        #expect(PromiseID.isValid("build/lib"))
        #expect(PromiseID.isValid(String(repeating: "a", count: 256)))
        #expect(!PromiseID.isValid(String(repeating: "a", count: 257)))
        #expect(!PromiseID.isValid(""))
        #expect(!PromiseID.isValid("a\u{1B}[31m"))
        // Each kind of byte at every place of ids around the eight-byte steps of the check.
        for length in 1...20 {
            for place in 0..<length {
                func id(_ character: Character) -> String {
                    String(repeating: "a", count: place) + String(character) + String(repeating: "z", count: length - place - 1)
                }
                #expect(!PromiseID.isValid(id("\u{1F}")), "control at \(place) of \(length)")
                #expect(!PromiseID.isValid(id("\u{7F}")), "DEL at \(place) of \(length)")
                #expect(PromiseID.isValid(id("~")) && PromiseID.isValid(id(" ")), "printable at \(place) of \(length)")
                #expect(PromiseID.isValid(id("\u{E9}")), "é at \(place) of \(length)")
            }
        }
        #expect(!PromiseID.isValid("a\u{2028}b"))
    }
}
