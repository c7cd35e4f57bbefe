extension Promise {
    /// Starts `operation` in a new `Task` and settles with its outcome.
    ///
    /// Cancelling the promise cancels the task (which sees
    /// `Task.isCancelled`); an operation that throws `CancellationError`
    /// cancels the promise.
    ///
    /// ```swift
    /// let user = Promise { try await api.fetchUser(id) }
    /// user.cancel()   // cancels the Task running fetchUser
    /// ```
    public convenience init(
        priority: TaskPriority? = nil,
        _ operation: @escaping @Sendable () async throws -> Value
    ) {
        self.init()
        let task = Task(priority: priority) { [self] in
            do {
                fulfill(try await operation())
            } catch is CancellationError {
                cancel()
            } catch {
                reject(error)
            }
        }
        onCancel(on: .inline) { task.cancel() }
    }

    /// The fulfilled value, awaited; throws the rejection error.
    ///
    /// If the awaiting task is cancelled, this throws `CancellationError` at
    /// once and leaves the promise alone: other consumers may still want its
    /// result. What the await registered on the promise is withdrawn, so
    /// awaits given up on a promise that stays pending leave nothing behind. To cancel the promise along with the task, use
    /// ``value(cancellingOnTaskCancellation:)``.
    ///
    /// ```swift
    /// let user = try await fetchUser(id).value
    /// ```
    public var value: Value {
        get async throws {
            try await value(cancellingOnTaskCancellation: false)
        }
    }

    /// The fulfilled value, awaited; with `true`, cancelling the awaiting
    /// task cancels the promise too (and so, through the tree, its work).
    ///
    /// ```swift
    /// let task = Task { try await search(query).value(cancellingOnTaskCancellation: true) }
    /// task.cancel()   // cancels the search
    /// ```
    public func value(cancellingOnTaskCancellation: Bool) async throws -> Value {
        if let result { return try result.get() }
        let resumer = _OnceResumer<Value>()
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                guard resumer.install(continuation) else { return }
                // Keyed by the resumer, to be withdrawn on task cancellation.
                _register(_Callback(follower: resumer, body: _NoBody()) { callback, result, _, _ in
                    callback.follower(as: _OnceResumer<Value>.self).resume(with: result._result(Value.self))
                }, isChild: false)
                // A cancellation between `install` and here withdrew nothing.
                if resumer.hasResumed { _withdraw(resumer) }
            }
        } onCancel: {
            if cancellingOnTaskCancellation {
                cancel()
            } else {
                resumer.resume(with: .failure(CancellationError()))
                _withdraw(resumer)
            }
        }
    }
}

/// Resumes a continuation exactly once, whichever comes first: the promise
/// settling or the task being cancelled (which may even come before the
/// continuation exists). Also what PromiseClient's async calls await.
package final class _OnceResumer<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var continuation: UnsafeContinuation<Value, any Error>?
        var early: Result<Value, any Error>?
        var resumed = false
    }

    private let state = _Locked(State())

    package init() {}

    /// Installs `continuation`; false when a result came first and it was
    /// resumed with that at once.
    package func install(_ continuation: UnsafeContinuation<Value, any Error>) -> Bool {
        let early = state.withLock { state -> Result<Value, any Error>? in
            if let early = state.early {
                state.early = nil
                state.resumed = true
                return early
            }
            state.continuation = continuation
            return nil
        }
        guard let early else { return true }
        continuation.resume(with: early)
        return false
    }

    package var hasResumed: Bool {
        state.withLock { $0.resumed }
    }

    package func resume(with result: Result<Value, any Error>) {
        let continuation = state.withLock { state -> UnsafeContinuation<Value, any Error>? in
            guard !state.resumed else { return nil }
            guard let continuation = state.continuation else {
                if state.early == nil { state.early = result }
                return nil
            }
            state.resumed = true
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: result)
    }
}
