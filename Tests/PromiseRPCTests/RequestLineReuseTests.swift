import PromiseJSON
import PromiseModel
@testable import PromiseRPC
import Testing

/// The dispatcher reads each request's params into the emptied storage of
/// the last one's (`RPCParams.takeStorage()`): reused storage must read
/// exactly as new storage does.
@Suite("Params storage reused between requests")
struct RequestLineReuseTests {
    private static let lines = [
        #"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"a"}}"#,
        #"{"jsonrpc":"2.0","id":2,"method":"resolve","params":{"id":"a","value":{"n":[1,2]}}}"#,
        #"{"jsonrpc":"2.0","id":3,"method":"then","params":{"id":"a","exec":["sh","-c","x"],"cwd":"/","env":{"A":"1"},"name":"n","pool":"p","timeoutMs":5,"on":"settled","stopOnFailure":true,"input":"stdin"}}"#,
        #"{"jsonrpc":"2.0","id":4,"method":"get","params":{}}"#,
        #"[{"jsonrpc":"2.0","id":5,"method":"get","params":{"id":"b","x":1}},{"jsonrpc":"2.0","id":6,"method":"get","params":{"id":"c"}}]"#,
        #"{"jsonrpc":"2.0","id":7,"method":"get","params":{"id":"d","id":"e"}}"#,
    ]

    @Test("each line reads the same into storage reused from every line before it as into new storage, and takes the storage")
    func reusedStorageReadsAsNew() throws {
        var spare: [RPCParams.Pair]?
        for _ in 0..<2 {
            for line in Self.lines {
                let bytes = Array(line.utf8)
                let fresh = try RequestLine(parsing: bytes)
                let reused = try bytes.withUnsafeBytes { try RequestLine(parsing: $0, reusing: &spare) }
                #expect(reused == fresh, "\(line)")
                #expect(spare == nil, "the storage went to the first params read")
                // As the dispatcher does once the request is answered.
                guard case .single(let envelope?) = reused, case .named(let params)? = envelope.params else {
                    guard case .batch(let members) = reused, case .named(let first)? = members.first??.params else {
                        Issue.record("no params in \(line)")
                        continue
                    }
                    spare = first.takeStorage()
                    continue
                }
                spare = params.takeStorage()
            }
        }
    }

    @Test("taken storage is empty and keeps its capacity; params still held elsewhere keep their members")
    func takenStorageIsEmpty() {
        let params = RPCParams(pairs: (0..<12).map { RPCParams.Pair(key: "k\($0)", value: .int($0)) })
        let held = params
        let storage = params.takeStorage()
        #expect(storage.isEmpty)
        #expect(storage.capacity >= 12)
        #expect(held.count == 12 && held["k3"] == 3 && held["k11"] == 11)
    }
}
