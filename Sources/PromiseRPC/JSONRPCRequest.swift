import PromiseJSON
import PromiseModel

/// One JSON-RPC 2.0 request or notification, checked against the envelope
/// rules (docs/PROTOCOL.md, "Envelope") but not yet against its method.
///
/// ```swift
/// let message = try JSONValue(parsing: #"{"jsonrpc":"2.0","id":7,"method":"get","params":{"id":"a"}}"#)
/// let request = try JSONRPCRequest(message)   // id 7, method "get", params ["id": "a"]
/// ```
public struct JSONRPCRequest: Sendable, Hashable {
    /// The request id: a string, a number or null. nil for a notification
    /// (no "id" member), which is executed and never answered.
    public var id: JSONValue?
    public var method: String
    /// The named params; an absent (or null) "params" reads as an empty object.
    public var params: [String: JSONValue] {
        get { namedParams.members }
        set { namedParams = RPCParams(newValue) }
    }

    /// The same params, as the methods read them.
    var namedParams: RPCParams

    public init(id: JSONValue?, method: String, params: [String: JSONValue] = [:]) {
        self.init(id: id, method: method, namedParams: RPCParams(params))
    }

    init(id: JSONValue?, method: String, namedParams: RPCParams) {
        self.id = id
        self.method = method
        self.namedParams = namedParams
    }

    /// True when no answer is to be sent.
    public var isNotification: Bool { id == nil }

    /// Reads a request object.
    ///
    /// - Throws: ``JSONRPCRequest/Rejection`` carrying the error to answer with
    ///   and the id to answer to: -32600 when `message` is not a JSON-RPC 2.0
    ///   request object, -32602 when "params" is present but not an object.
    public init(_ message: JSONValue) throws(Rejection) {
        try self.init(JSONRPCEnvelope(message))
    }

    /// Checks the envelope of a message; nil stands for a message that is
    /// not an object. Throws as ``init(_:)-(JSONValue)`` does.
    init(_ envelope: consuming JSONRPCEnvelope?) throws(Rejection) {
        let (id, method, params, lentID) = try Self.check(envelope)
        assert(lentID == nil, "only the dispatcher reads lines lending ids, and it makes no request of them")
        self.init(id: id, method: method.name, namedParams: params)
    }

    /// Checks the envelope of a message (nil for a message that is not an
    /// object) and returns the request's parts, as the dispatcher reads
    /// them. Throws as ``init(_:)-(JSONValue)`` does.
    ///
    /// Parts, not a request: a request made here would be copied to be
    /// returned, then destroyed (a tuple is returned as it is made), and the
    /// method is kept as the parser told it, with no `String` made of a
    /// known method (docs/PERFORMANCE.md).
    package static func check(
        _ envelope: consuming JSONRPCEnvelope?
    ) throws(Rejection) -> (id: JSONValue?, method: RequestedMethod, params: RPCParams, lentID: LentPromiseID?) {
        // Each member is taken out of the envelope, not copied and then
        // destroyed with the envelope (docs/PERFORMANCE.md).
        guard var envelope = envelope.take() else {
            throw Rejection(id: .null, error: RPCError(.invalidRequest, "a request must be a JSON object"))
        }
        // The id is read first so that every later complaint goes back to it.
        let id = envelope.id.take()
        var answerID: JSONValue = .null
        if let id {
            switch id {
            case .string, .int, .double, .null: answerID = id
            default:
                throw Rejection(id: .null, error: RPCError(.invalidRequest, "\"id\" must be a string, a number or null"))
            }
        }
        // Matched in place: comparing with `.string("2.0")` made that value
        // and copied the member, each time.
        guard case .string(let version)? = envelope.jsonrpc, version == "2.0" else {
            throw Rejection(id: answerID, error: RPCError(.invalidRequest, "\"jsonrpc\" must be \"2.0\""))
        }
        let method: RequestedMethod
        switch envelope.method.take() {
        case .known(let known)?: method = .known(known)
        case .other(.string(let name))?: method = .unknown(name)
        default: throw Rejection(id: answerID, error: RPCError(.invalidRequest, "\"method\" must be a string"))
        }
        let params: RPCParams
        switch envelope.params.take() {
        case .named(let named)?: params = named
        case nil, .other(.null)?: params = RPCParams(pairs: [])  // null is read as absent: clients often write a missing value so
        case .other?:
            throw Rejection(
                id: answerID, notification: id == nil,
                error: RPCError(.invalidParams, "\"params\" must be an object (named params)"))
        }
        return (id, method, params, envelope.lentID)
    }

    /// Why a message is not an acceptable request, and where the answer goes.
    public struct Rejection: Error, Sendable, Hashable {
        /// The id to answer to: the request's own when it could be read, else null.
        public var id: JSONValue
        /// True when the message was a well-formed notification with bad params:
        /// like any notification it gets no answer.
        public var notification: Bool
        public var error: RPCError

        public init(id: JSONValue, notification: Bool = false, error: RPCError) {
            self.id = id
            self.notification = notification
            self.error = error
        }
    }
}
