import Promise

extension PromiseConnection {
    /// A local promise that mirrors the daemon's promise `id`: it settles
    /// once, when that one settles, and shows no state the daemon does not have.
    ///
    /// The daemon's `subscribe` is used, so `id` may be created after this
    /// call (wait-before-create), and a promise settled already settles the
    /// mirror at once. Fulfilled, the value is decoded as `type`; rejected,
    /// the mirror is rejected with the record's reason (a ``RemoteRejection``
    /// naming its `origin`); cancelled, the mirror is cancelled. Progress
    /// reported on the daemon becomes the mirror's `progress`.
    ///
    /// Cancelling the mirror stops watching (unsubscribing when nothing else
    /// on this connection watches `id`) and leaves the daemon's promise
    /// alone, unless `cancellingRemote` is true: then it cancels that too.
    ///
    /// ```swift
    /// let lib: Promise<Artifact> = remote.promise("build/lib", as: Artifact.self)
    /// let tested = lib.then { artifact in try runTests(artifact) }
    /// let artifact = try await lib.value
    /// ```
    /// - Returns: A promise rejected with ``PromiseConnectionError``
    ///   (``PromiseConnectionError/Code/decoding``) when the value does not decode
    ///   as `type`, and with the connection's error when it is closed or lost first.
    public func promise<T: Decodable & Sendable>(_ id: String, as type: T.Type, cancellingRemote: Bool = false)
        -> Promise<T>
    {
        let mirror = RemoteMirror<T>(id: id, core: core, cancellingRemote: cancellingRemote)
        mirror.start()
        return mirror.promise
    }
}
