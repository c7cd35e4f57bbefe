import Promise
import PromiseJSON
import PromiseModel
import PromiseRPC

extension PromiseConnection {
    /// Creates a pending promise.
    ///
    /// ```swift
    /// let record = try await remote.create("build/lib", timeout: .seconds(600), lease: true)
    /// ```
    /// - Parameters:
    ///   - id: Its id; nil lets the daemon make one (`"p1"`, …), read it from the record.
    ///   - timeout: Rejects it if still pending then (`timeoutMs`, whole milliseconds, rounded up).
    ///   - lease: True rejects it if this connection closes while it is pending.
    ///   - name: A name for people, kept in the record.
    /// - Returns: Its record.
    /// - Throws: ``PromiseConnectionError``: ``PromiseConnectionError/Code/exists`` when the
    ///   id is taken, ``PromiseConnectionError/Code/invalidParams`` for an id that is not
    ///   printable, ``PromiseConnectionError/Code/refused`` past `maxPromises`.
    @discardableResult
    public func create(_ id: String? = nil, timeout: Duration? = nil, lease: Bool = false, name: String? = nil)
        async throws -> PromiseRecord
    {
        try await request("create", RemoteRequests.create(id, timeout: timeout, lease: lease, name: name),
                          takesLease: lease, decode: RemoteRequests.record)
    }

    /// Fulfils promise `id` with `value`, encoded as JSON.
    ///
    /// ```swift
    /// try await remote.resolve("build/lib", with: Artifact(path: "lib.a", bytes: 4096))
    /// ```
    /// - Returns: Its record, fulfilled.
    /// - Throws: ``PromiseConnectionError``: ``PromiseConnectionError/Code/alreadySettled``
    ///   (``PromiseConnectionError/record`` is the record), ``PromiseConnectionError/Code/noSuchPromise``,
    ///   ``PromiseConnectionError/Code/encoding`` when `value` does not encode (nothing is sent).
    @discardableResult
    public func resolve(_ id: String, with value: some Encodable & Sendable) async throws -> PromiseRecord {
        try await request("resolve", try RemoteRequests.resolve(id, with: value), decode: RemoteRequests.record)
    }

    /// Rejects promise `id` with a reason made of `message`.
    ///
    /// ```swift
    /// try await remote.reject("build/lib", message: "make failed")
    /// ```
    /// - Returns: Its record, rejected; its reason's `origin` is `id`.
    /// - Throws: ``PromiseConnectionError``: ``PromiseConnectionError/Code/alreadySettled``,
    ///   ``PromiseConnectionError/Code/noSuchPromise``.
    @discardableResult
    public func reject(_ id: String, message: String) async throws -> PromiseRecord {
        try await reject(id, reason: RemoteRejection(message: message))
    }

    /// Rejects promise `id` with `reason` (code, message, data).
    ///
    /// ```swift
    /// try await remote.reject("build/lib", reason: RemoteRejection(code: 2, message: "make failed"))
    /// ```
    @discardableResult
    public func reject(_ id: String, reason: RemoteRejection) async throws -> PromiseRecord {
        try await request("reject", RemoteRequests.reject(id, reason: reason), decode: RemoteRequests.record)
    }

    /// Cancels promise `id` and its pending descendants (docs/PROTOCOL.md, "Cancellation").
    ///
    /// ```swift
    /// try await remote.cancel("build")
    /// ```
    /// - Returns: Its record, cancelled.
    /// - Throws: ``PromiseConnectionError``: ``PromiseConnectionError/Code/alreadySettled``
    ///   when it had settled (its pending descendants are cancelled all the same),
    ///   ``PromiseConnectionError/Code/noSuchPromise``.
    @discardableResult
    public func cancel(_ id: String) async throws -> PromiseRecord {
        try await request("cancel", RemoteRequests.id(id), decode: RemoteRequests.record)
    }

    /// The record of promise `id`, as it is now.
    ///
    /// ```swift
    /// let record = try await remote.get("build/lib")
    /// ```
    /// - Throws: ``PromiseConnectionError``: ``PromiseConnectionError/Code/noSuchPromise``.
    public func get(_ id: String) async throws -> PromiseRecord {
        try await request("get", RemoteRequests.id(id), decode: RemoteRequests.record)
    }

    /// The record of promise `id` once it has settled; it may be created after the call.
    ///
    /// It waits through a subscription (`subscribe`), so a task cancelled
    /// while it waits withdraws it (`unsubscribe`): the daemon keeps nothing
    /// for it, and it counts against `maxSubscriptionsPerConnection`, not
    /// `maxWaitersPerConnection`. Reconnections do not end it.
    ///
    /// ```swift
    /// let record = try await remote.wait("build/lib", timeout: .seconds(60))
    /// ```
    /// - Throws: ``PromiseConnectionError``: ``PromiseConnectionError/Code/timedOut``
    ///   when `timeout` passed first (the promise is untouched; the error's
    ///   ``PromiseConnectionError/record`` is its pending record, or nil if it
    ///   does not exist yet); `CancellationError` when the task is cancelled.
    public func wait(_ id: String, timeout: Duration? = nil) async throws -> PromiseRecord {
        try await calls.wait(id, timeout: timeout).value(cancellingOnTaskCancellation: true)
    }

    /// Reports the progress of promise `id`, 0…1, with an optional message;
    /// subscribers and mirrors are told. Values below its progress are ignored.
    ///
    /// ```swift
    /// try await remote.reportProgress("build/lib", 0.5, message: "compiling")
    /// ```
    @discardableResult
    public func reportProgress(_ id: String, _ fraction: Double, message: String? = nil) async throws -> PromiseRecord {
        try await request("progress", RemoteRequests.progress(id, fraction, message: message), decode: RemoteRequests.record)
    }

    /// Takes the lease of pending promise `id`: it is rejected if this
    /// connection closes while it is pending.
    ///
    /// ```swift
    /// try await remote.lease("build/lib")
    /// ```
    /// - Throws: ``PromiseConnectionError``: ``PromiseConnectionError/Code/refused`` when
    ///   another open connection holds it, ``PromiseConnectionError/Code/alreadySettled``.
    @discardableResult
    public func lease(_ id: String) async throws -> PromiseRecord {
        try await request("lease", RemoteRequests.id(id), takesLease: true, decode: RemoteRequests.record)
    }

    /// Every pool of the daemon, sorted by name (docs/PROTOCOL.md, "Pools").
    ///
    /// ```swift
    /// for pool in try await remote.pools() { print(pool.name, pool.running, "/", pool.limit) }
    /// ```
    public func pools() async throws -> [PoolStatus] {
        try await send(.pools)
    }

    /// Makes pool `name` if needed and sets its limit (0…65536; 0 pauses
    /// it); what can start then starts. The daemon stores the limit before it answers.
    ///
    /// ```swift
    /// try await remote.setPool("cc", limit: 4)
    /// ```
    /// - Returns: The pool, with the new limit.
    /// - Throws: ``PromiseConnectionError``: ``PromiseConnectionError/Code/invalidParams``
    ///   for a name or limit out of range, ``PromiseConnectionError/Code/refused`` past `maxPools`.
    @discardableResult
    public func setPool(_ name: String, limit: Int) async throws -> PoolStatus {
        try await send(.setPool(name, limit: limit))
    }

    /// What the daemon kept of step `id`'s output: the end of its stdout
    /// and stderr (docs/PROTOCOL.md, "Logs").
    ///
    /// ```swift
    /// print(try await remote.logs("test/lib").stderr, terminator: "")
    /// ```
    /// - Throws: ``PromiseConnectionError``: ``PromiseConnectionError/Code/noSuchPromise``
    ///   (also for an id not created yet).
    public func logs(_ id: String) async throws -> PromiseLog {
        try await send(.logs(id))
    }
}
