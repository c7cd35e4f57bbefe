import PromiseJSON
import PromiseModel

/// A JSON-RPC 2.0 error object, with the codes the protocol pins
/// (docs/PROTOCOL.md, "Errors").
///
/// ```swift
/// throw RPCError(.noSuchPromise, "no promise with id \"build\"")
/// ```
public struct RPCError: Error, Sendable, Hashable {
    /// An error code. The set is open: a client must accept codes it does not know.
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let parseError = Code(rawValue: -32700)
        public static let invalidRequest = Code(rawValue: -32600)
        public static let methodNotFound = Code(rawValue: -32601)
        public static let invalidParams = Code(rawValue: RejectionCode.invalidParams)
        public static let internalError = Code(rawValue: -32603)
        public static let noSuchPromise = Code(rawValue: -32001)
        public static let alreadySettled = Code(rawValue: -32002)
        public static let permissionDenied = Code(rawValue: -32003)
        public static let limitExceeded = Code(rawValue: RejectionCode.limitExceeded)
        public static let waitTimedOut = Code(rawValue: RejectionCode.waitTimedOut)
        public static let alreadyExists = Code(rawValue: -32006)
    }

    public var code: Code
    public var message: String
    public var data: JSONValue?

    public init(_ code: Code, _ message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// The error object as it travels: `{"code":…,"message":…,"data":…}`.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["code": .int(code.rawValue), "message": .string(message)]
        if let data { members["data"] = data }
        return .object(members)
    }
}

extension RPCError: RemoteRejectionConvertible {
    /// A promise rejected with this error carries its code, message and data.
    public var remoteRejection: RemoteRejection {
        RemoteRejection(code: code.rawValue, message: message, data: data)
    }
}
