import Promise
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseConnection {
    /// The requests of this connection in forms that return a core
    /// `Promise` instead of suspending: for plain threads (`wait(timeout:)`)
    /// and for chaining with the core's operators.
    ///
    /// ```swift
    /// let record = try remote.calls.get("build/lib").wait(timeout: .seconds(5))
    /// let both = Promise.all([remote.calls.create("a"), remote.calls.create("b")])
    /// ```
    public var calls: Calls { Calls(connection: self) }

    /// Each method sends its request at once and returns a promise of its
    /// answer, fulfilled with the typed record or rejected with a
    /// ``PromiseConnectionError``, as the `async` method of the same name
    /// on ``PromiseConnection`` returns or throws.
    public struct Calls: Sendable {
        let connection: PromiseConnection

        /// As ``PromiseConnection/create(_:timeout:lease:name:)``.
        public func create(_ id: String? = nil, timeout: Duration? = nil, lease: Bool = false, name: String? = nil)
            -> Promise<PromiseRecord>
        {
            connection.promisedRequest(
                "create", RemoteRequests.create(id, timeout: timeout, lease: lease, name: name), takesLease: lease,
                decode: RemoteRequests.record)
        }

        /// As ``PromiseConnection/resolve(_:with:)``; a value that does not encode rejects it at once.
        public func resolve(_ id: String, with value: some Encodable & Sendable) -> Promise<PromiseRecord> {
            do {
                return connection.promisedRequest(
                    "resolve", try RemoteRequests.resolve(id, with: value), decode: RemoteRequests.record)
            } catch {
                return Promise(error: error)
            }
        }

        /// As ``PromiseConnection/reject(_:message:)``.
        public func reject(_ id: String, message: String) -> Promise<PromiseRecord> {
            reject(id, reason: RemoteRejection(message: message))
        }

        /// As ``PromiseConnection/reject(_:reason:)``.
        public func reject(_ id: String, reason: RemoteRejection) -> Promise<PromiseRecord> {
            connection.promisedRequest("reject", RemoteRequests.reject(id, reason: reason), decode: RemoteRequests.record)
        }

        /// As ``PromiseConnection/cancel(_:)``.
        public func cancel(_ id: String) -> Promise<PromiseRecord> {
            connection.promisedRequest("cancel", RemoteRequests.id(id), decode: RemoteRequests.record)
        }

        /// As ``PromiseConnection/get(_:)``.
        public func get(_ id: String) -> Promise<PromiseRecord> {
            connection.promisedRequest("get", RemoteRequests.id(id), decode: RemoteRequests.record)
        }

        /// As ``PromiseConnection/wait(_:timeout:)``; cancelling the
        /// promise withdraws the wait from the daemon.
        public func wait(_ id: String, timeout: Duration? = nil) -> Promise<PromiseRecord> {
            let waiter = RemoteWaiter(id: id, core: connection.core)
            waiter.start(timeout: timeout)
            return waiter.promise
        }

        /// As ``PromiseConnection/reportProgress(_:_:message:)``.
        public func reportProgress(_ id: String, _ fraction: Double, message: String? = nil) -> Promise<PromiseRecord> {
            connection.promisedRequest(
                "progress", RemoteRequests.progress(id, fraction, message: message), decode: RemoteRequests.record)
        }

        /// As ``PromiseConnection/lease(_:)``.
        public func lease(_ id: String) -> Promise<PromiseRecord> {
            connection.promisedRequest("lease", RemoteRequests.id(id), takesLease: true, decode: RemoteRequests.record)
        }

        /// As ``PromiseConnection/pools()``.
        public func pools() -> Promise<[PoolStatus]> { send(.pools) }

        /// As ``PromiseConnection/setPool(_:limit:)``.
        public func setPool(_ name: String, limit: Int) -> Promise<PoolStatus> { send(.setPool(name, limit: limit)) }

        /// As ``PromiseConnection/logs(_:)``.
        public func logs(_ id: String) -> Promise<PromiseLog> { send(.logs(id)) }

        /// As ``PromiseConnection/call(_:_:)``.
        public func call(_ method: String, _ params: [String: JSONValue] = [:]) -> Promise<JSONValue> {
            connection.promisedRequest(method, params) { $0 }
        }
    }
}
