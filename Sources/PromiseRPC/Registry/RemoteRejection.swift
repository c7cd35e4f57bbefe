import Promise

/// Why a remote promise was rejected: the `reason` of its record,
/// `{"code":int?, "message":string, "data":any?}`, and the error its core
/// `Promise<JSONValue>` is rejected with.
///
/// `reject` turns its `reason` param into one of these; errors the core makes
/// itself (cancellation, timeouts, combinator failures) are turned into reasons
/// by ``init(describing:inputIDs:)``.
///
/// ```swift
/// promise.reject(RemoteRejection(code: 2, message: "make failed"))
/// RemoteRejection(describing: CancellationError()).json   // {"message":"cancelled"}
/// ```
public struct RemoteRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// An application-defined code, e.g. a command's exit status.
    public var code: Int?
    public var message: String
    /// Anything else the rejecting side wants to pass on.
    public var data: JSONValue?

    public init(code: Int? = nil, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// Reads a reason as `reject` takes it: an object with a string "message"
    /// (and optionally a whole-number "code" and any "data"), or a bare string
    /// taken as the message.
    ///
    /// - Throws: -32602 (invalid params, naming `param`) for anything else.
    public init(json: JSONValue, param: String = "reason") throws(RPCError) {
        switch json {
        case .string(let text):
            self.init(message: text)
        case .object(let members):
            guard case .string(let message)? = members["message"] else {
                throw RPCParams.invalid(param, "\"\(param)\" must have a string \"message\"")
            }
            var code: Int?
            if let codeValue = members["code"], !codeValue.isNull {
                guard let number = codeValue.intValue else {
                    throw RPCParams.invalid(param, "\"\(param).code\" must be a whole number")
                }
                code = number
            }
            // A null "data" is no data (beware: `nil` in a JSONValue context is `.null`).
            var data: JSONValue?
            if let member = members["data"], !member.isNull { data = member }
            self.init(code: code, message: message, data: data)
        default:
            throw RPCParams.invalid(param, "\"\(param)\" must be an object with a \"message\", or a string")
        }
    }

    /// The reason as it appears in records: `{"code":…,"message":…,"data":…}`,
    /// without the members that are absent.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["message": .string(message)]
        if let code { members["code"] = .int(code) }
        if let data { members["data"] = data }
        return .object(members)
    }

    public var description: String {
        code.map { "\(message) (code \($0))" } ?? message
    }

    /// The reason for any error a remote promise can be rejected with.
    ///
    /// - `RemoteRejection`: itself.
    /// - `CancellationError`: `{"message":"cancelled"}`.
    /// - `PromiseError.timedOut` (a `create` with `timeoutMs`): code -32005, "timed out".
    /// - `AggregateError` (`all` with `all-errors`, `any` when every input
    ///   failed): `data.errors` lists `{"index","id","reason"}` per failed input;
    ///   `inputIDs` gives the ids of the combinator's inputs, by index.
    /// - `RPCError`: its code, message and data.
    /// - anything else: its description as the message.
    public init(describing error: any Error, inputIDs: [String]? = nil) {
        switch error {
        case let rejection as RemoteRejection:
            self = rejection
        case is CancellationError:
            self.init(message: "cancelled")
        case let promiseError as PromiseError:
            // Compared, not switched over: the core may add cases.
            if promiseError == .timedOut {
                self.init(code: RPCError.Code.waitTimedOut.rawValue, message: "timed out")
            } else if promiseError == .cycle {
                self.init(message: "the promise would wait on itself (cycle)")
            } else if promiseError == .emptyInput {
                self.init(message: "no input promises")
            } else {
                self.init(message: String(describing: promiseError))
            }
        case let aggregate as AggregateError:
            let failures: [JSONValue] = aggregate.failures.map { failure in
                var entry: [String: JSONValue] = [
                    "index": .int(failure.index),
                    "reason": RemoteRejection(describing: failure.error).json,
                ]
                if let inputIDs, inputIDs.indices.contains(failure.index) {
                    entry["id"] = .string(inputIDs[failure.index])
                }
                return .object(entry)
            }
            let total = inputIDs.map { " of \($0.count)" } ?? ""
            self.init(
                message: "\(failures.count)\(total) input promises were rejected",
                data: ["errors": .array(failures)])
        case let rpcError as RPCError:
            self.init(code: rpcError.code.rawValue, message: rpcError.message, data: rpcError.data)
        default:
            self.init(message: String(describing: error))
        }
    }
}
