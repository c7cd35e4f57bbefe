import Promise
import PromiseJSON

/// One typed request to the daemon: its method, its params, and how its
/// answer reads. Send it with ``PromiseConnection/send(_:)`` (`async`) or
/// ``PromiseConnection/Calls/send(_:)`` (a core `Promise`).
///
/// ```swift
/// let build = try await remote.send(.all(["build/lib", "build/doc"], policy: .allErrors, id: "build"))
/// let page = try remote.calls.send(.list(prefix: "build/")).wait(timeout: .seconds(5))
/// ```
public struct RemoteRequest<Answer: Sendable>: Sendable {
    public let method: String
    public let params: [String: JSONValue]
    let takesLease: Bool
    let decode: @Sendable (JSONValue) throws(PromiseConnectionError) -> Answer

    /// A request of `method` whose answer `decode` reads.
    public init(_ method: String, _ params: [String: JSONValue],
                decode: @escaping @Sendable (JSONValue) throws(PromiseConnectionError) -> Answer) {
        self.init(method, params, takesLease: false, decode: decode)
    }

    init(_ method: String, _ params: [String: JSONValue], takesLease: Bool,
         decode: @escaping @Sendable (JSONValue) throws(PromiseConnectionError) -> Answer) {
        self.method = method
        self.params = params
        self.takesLease = takesLease
        self.decode = decode
    }
}

extension PromiseConnection {
    /// Sends `request` and awaits its typed answer.
    ///
    /// ```swift
    /// let race = try await remote.send(.race(["mirror/a", "mirror/b"], id: "fastest"))
    /// ```
    /// - Throws: ``PromiseConnectionError``.
    public func send<Answer>(_ request: RemoteRequest<Answer>) async throws -> Answer {
        try await self.request(request.method, request.params, takesLease: request.takesLease, decode: request.decode)
    }
}

extension PromiseConnection.Calls {
    /// Sends `request` and returns a promise of its typed answer.
    ///
    /// ```swift
    /// let record = try remote.calls.send(.then("build/lib", childID: "test/lib", exec: ["make", "test"])).wait()
    /// ```
    public func send<Answer>(_ request: RemoteRequest<Answer>) -> Promise<Answer> {
        connection.promisedRequest(request.method, request.params, takesLease: request.takesLease, decode: request.decode)
    }
}
