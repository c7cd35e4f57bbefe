import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

@Suite("BlockingPromiseClient.Record")
struct ClientRecordTests {
    @Test("a rejected record exposes its reason's message and code")
    func rejectedRecord() throws {
        let record = try BlockingPromiseClient.Record([
            "id": "build/lib", "state": "rejected", "parent": "build",
            "reason": ["code": 2, "message": "make failed"],
        ])
        #expect(record.state == .rejected)
        #expect(record.parent == "build")
        #expect(record.value == nil)
        #expect(record.reasonMessage == "make failed")
        #expect(record.reasonCode == 2)
    }

    @Test("a fulfilled record keeps its value and every other field")
    func fulfilledRecord() throws {
        let json: JSONValue = ["id": "a", "state": "fulfilled", "value": [1, 2], "parent": nil, "name": "n"]
        let record = try BlockingPromiseClient.Record(json)
        #expect(record.value == [1, 2])
        #expect(record.parent == nil)
        #expect(record.json["name"] == "n")
    }

    @Test("a record with an unknown state or no id is an invalid response")
    func malformedRecord() {
        for json: JSONValue in [["id": "a", "state": "done"], ["state": "pending"], "a"] {
            let error = #expect(throws: PromiseClientError.self) { try BlockingPromiseClient.Record(json) }
            #expect(error?.code == .invalidResponse)
        }
    }
}
