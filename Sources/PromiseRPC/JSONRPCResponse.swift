import PromiseJSON

/// The messages the daemon writes: answers to requests and pushed
/// notifications, each one compact JSON text without the trailing newline.
///
/// ```swift
/// JSONRPCResponse.result(7, ["subscribed": 1])
/// // {"id":7,"jsonrpc":"2.0","result":{"subscribed":1}}
/// JSONRPCResponse.error(.null, RPCError(.parseError, "not JSON"))
/// // {"error":{"code":-32700,"message":"not JSON"},"id":null,"jsonrpc":"2.0"}
/// ```
public enum JSONRPCResponse {
    /// A successful answer.
    public static func result(_ id: JSONValue, _ result: JSONValue) -> JSONValue {
        .object(["jsonrpc": "2.0", "id": id, "result": result])
    }

    /// An error answer.
    public static func error(_ id: JSONValue, _ error: RPCError) -> JSONValue {
        .object(["jsonrpc": "2.0", "id": id, "error": error.json])
    }

    /// The answer for `outcome`.
    public static func answer(_ id: JSONValue, _ outcome: Result<JSONValue, RPCError>) -> JSONValue {
        switch outcome {
        case .success(let value): result(id, value)
        case .failure(let failure): error(id, failure)
        }
    }

    /// A server push: `{"jsonrpc":"2.0","method":…,"params":…}`.
    public static func notification(_ method: String, _ params: JSONValue) -> JSONValue {
        .object(["jsonrpc": "2.0", "method": .string(method), "params": params])
    }
}
