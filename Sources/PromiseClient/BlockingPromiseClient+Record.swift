import PromiseJSON

extension BlockingPromiseClient {
    /// A typed view of a promise record as the daemon sends it
    /// (`{"id":"build/lib","state":"fulfilled","value":…,"parent":null,…}`).
    ///
    /// ```swift
    /// let record = try BlockingPromiseClient.Record(client.call("wait", ["id": "build/lib"]))
    /// if record.state == .rejected { print(record.reasonMessage ?? "") }
    /// ```
    public struct Record: Sendable, Hashable {
        /// `pending`, `fulfilled`, `rejected` or `cancelled`.
        public typealias State = PromiseRecord.State

        public var id: String
        public var state: State
        /// The value, when fulfilled.
        public var value: JSONValue?
        /// `{"code":int?, "message":string, "data":any?, "origin":string?}`, when rejected or cancelled.
        public var reason: JSONValue?
        /// The id this promise follows, if any.
        public var parent: String?
        /// The whole record, with every field the daemon sent.
        public var json: JSONValue

        /// Reads a record; throws ``PromiseClientError`` (`invalidResponse`) when
        /// `id` or `state` is missing or unknown.
        public init(_ json: JSONValue) throws {
            guard let id = json["id"]?.stringValue,
                let stateText = json["state"]?.stringValue,
                let state = State(rawValue: stateText)
            else {
                throw PromiseClientError(.invalidResponse, "the daemon sent a malformed promise record: \(json)")
            }
            self.id = id
            self.state = state
            self.value = json["value"]
            self.reason = json["reason"]
            self.parent = json["parent"]?.stringValue
            self.json = json
        }

        /// The reason's message; a bare string reason is its own message.
        public var reasonMessage: String? {
            if let text = reason?.stringValue { return text }
            return reason?["message"]?.stringValue
        }

        /// The reason's code, when it has one.
        public var reasonCode: Int? { reason?["code"]?.intValue }

        /// The id of the promise where the rejection began (the reason's
        /// `origin`): a failed step, seen from a `then` child or a
        /// combinator further down the pipeline. Nil when the daemon did not say.
        public var reasonOrigin: String? { reason?["origin"]?.stringValue }
    }
}
