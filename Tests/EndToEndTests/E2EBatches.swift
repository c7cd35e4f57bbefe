import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC

extension E2ERawConnection {
    /// Sends `calls` as one batch line and returns the results in order; throws
    /// when the answer does not come within `timeout` or a member failed.
    @discardableResult
    func batch(_ calls: [(method: String, params: JSONValue)], timeout: Duration = .seconds(120)) throws -> [JSONValue] {
        try batchAnswers(calls, timeout: timeout).map { answer in
            guard let result = answer["result"] else { throw E2EHarnessError("a batch member failed: \(answer)") }
            return result
        }
    }

    /// Sends `calls` as one batch line and returns its answer's members as
    /// they came (results and errors); throws when none comes within `timeout`.
    func batchAnswers(_ calls: [(method: String, params: JSONValue)], timeout: Duration = .seconds(120)) throws -> [JSONValue] {
        let members = calls.enumerated().map { index, call -> JSONValue in
            ["jsonrpc": "2.0", "id": .int(index), "method": .string(call.method), "params": call.params]
        }
        guard write(JSONValue.array(members).serialized() + [0x0A]) else {
            throw E2EHarnessError("the daemon closed the connection")
        }
        guard let answer = try readMessage(timeout: timeout), case .array(let answers) = answer else {
            throw E2EHarnessError("no batch answer within \(timeout)")
        }
        return answers
    }

    /// Calls `method` alone and returns its result; throws on an error or no answer within `timeout`.
    @discardableResult
    func call(_ method: String, _ params: JSONValue = [:], timeout: Duration = .seconds(120)) throws -> JSONValue {
        let request: JSONValue = ["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": params]
        guard write(request.serialized() + [0x0A]) else { throw E2EHarnessError("the daemon closed the connection") }
        guard let answer = try readMessage(timeout: timeout) else {
            throw E2EHarnessError("no answer to \(method) within \(timeout)")
        }
        guard let result = answer["result"] else { throw E2EHarnessError("\(method) failed: \(answer)") }
        return result
    }
}
