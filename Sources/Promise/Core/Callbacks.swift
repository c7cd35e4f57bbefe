/// The handler kinds, each made inside the operator that registers it (see
/// `_Callback`). On cancellation from above, a child is cancelled without
/// running its handler; otherwise the handler runs on its executor, or —
/// for `.inline` — right here, settling the child through the worklist.
/// A child whose handler goes to an executor is recorded as in flight, so a
/// cancel of its settled parent still reaches it, and its `then`/`recover`
/// handler does not start once it is cancelled.
///
/// Each `invoke` closure reads its child and body back from the callback
/// and captures only the executor, which for `.inline` and `.default` has
/// no stored properties: the handler then costs no allocation.
extension Promise {
    /// `then`: maps a fulfilled value; a rejection passes through.
    @inlinable
    func _thenCallback<U: Sendable, E: Executor>(
        _ body: @escaping @Sendable (Value) throws -> U, child: Promise<U>, executor: E
    ) -> _Callback {
        _Callback(follower: child, body: _MapBody(call: body)) { callback, result, cancelled, work in
            let child = callback.follower(as: Promise<U>.self)
            if cancelled { return child._cancelFromAncestor(&work) }
            switch result._result(Value.self) {
            case .failure(let error):
                child._settle(.failure(error), &work)
            case .success(let value) where E.self == InlineExecutor.self:
                child._settle(Result { try callback.body(as: _MapBody<Value, U>.self).call(value) }, &work)
            case .success(let value):
                let body = callback.body(as: _MapBody<Value, U>.self).call
                child._dispatchHandler(on: executor) { child._settle(Result { try body(value) }) }
            }
        }
    }

    /// `then` whose handler returns a promise: the child adopts it.
    @inlinable
    func _thenAdoptCallback<U: Sendable, E: Executor>(
        _ body: @escaping @Sendable (Value) throws -> Promise<U>, child: Promise<U>, executor: E
    ) -> _Callback {
        _Callback(follower: child, body: _FlatMapBody(call: body)) { callback, result, cancelled, work in
            let child = callback.follower(as: Promise<U>.self)
            if cancelled { return child._cancelFromAncestor(&work) }
            switch result._result(Value.self) {
            case .failure(let error):
                child._settle(.failure(error), &work)
            case .success(let value) where E.self == InlineExecutor.self:
                child._adopt(Result { try callback.body(as: _FlatMapBody<Value, U>.self).call(value) }, &work)
            case .success(let value):
                let body = callback.body(as: _FlatMapBody<Value, U>.self).call
                child._dispatchHandler(on: executor) { child._adopt(Result { try body(value) }) }
            }
        }
    }

    /// `recover`: maps a rejection (not a cancellation from above).
    @inlinable
    func _recoverCallback<E: Executor>(
        _ body: @escaping @Sendable (any Error) throws -> Value, child: Promise<Value>, executor: E
    ) -> _Callback {
        _Callback(follower: child, body: _RecoverBody(call: body)) { callback, result, cancelled, work in
            let child = callback.follower(as: Promise<Value>.self)
            if cancelled { return child._cancelFromAncestor(&work) }
            switch result._result(Value.self) {
            case .success(let value):
                child._settle(.success(value), &work)
            case .failure(let error) where E.self == InlineExecutor.self:
                child._settle(Result { try callback.body(as: _RecoverBody<Value>.self).call(error) }, &work)
            case .failure(let error):
                let body = callback.body(as: _RecoverBody<Value>.self).call
                child._dispatchHandler(on: executor) { child._settle(Result { try body(error) }) }
            }
        }
    }

    /// `recover` whose handler returns a promise: the child adopts it.
    @inlinable
    func _recoverAdoptCallback<E: Executor>(
        _ body: @escaping @Sendable (any Error) throws -> Promise<Value>, child: Promise<Value>, executor: E
    ) -> _Callback {
        _Callback(follower: child, body: _FlatRecoverBody(call: body)) { callback, result, cancelled, work in
            let child = callback.follower(as: Promise<Value>.self)
            if cancelled { return child._cancelFromAncestor(&work) }
            switch result._result(Value.self) {
            case .success(let value):
                child._settle(.success(value), &work)
            case .failure(let error) where E.self == InlineExecutor.self:
                child._adopt(Result { try callback.body(as: _FlatRecoverBody<Value>.self).call(error) }, &work)
            case .failure(let error):
                let body = callback.body(as: _FlatRecoverBody<Value>.self).call
                child._dispatchHandler(on: executor) { child._adopt(Result { try body(error) }) }
            }
        }
    }

    /// `always`: sees every outcome, then passes it on to its child. When
    /// cancelled from above, the child is cancelled at once with the rest of
    /// the tree, and the handler still sees the cancellation.
    @inlinable
    func _alwaysCallback<E: Executor>(
        _ body: @escaping @Sendable (Result<Value, any Error>) -> Void, child: Promise<Value>, executor: E
    ) -> _Callback {
        _Callback(follower: child, body: _ResultBody(call: body)) { callback, result, cancelled, work in
            let child = callback.follower(as: Promise<Value>.self)
            let body = callback.body(as: _ResultBody<Value>.self).call
            let result = result._result(Value.self)
            if cancelled {
                child._cancelFromAncestor(&work)
                executor.execute { body(result) }
            } else if E.self == InlineExecutor.self {
                body(result)
                child._settle(result, &work)
            } else {
                child._dispatchHandler(on: executor, evenIfCancelled: true) {
                    body(result)
                    child._settle(result)
                }
            }
        }
    }

    /// `onCancel`: an observer that runs when the promise ends cancelled.
    @inlinable
    func _onCancelCallback<E: Executor>(_ body: @escaping @Sendable () -> Void, executor: E) -> _Callback {
        _Callback(follower: nil) { result, _, _ in
            guard case .failure(let error) = result._result(Value.self), error is CancellationError else { return }
            executor.execute(body)
        }
    }

    /// A promise adopting this one (A+ 2.3.2): settles as this one does.
    @inlinable
    func _adoptCallback(adopter: Promise<Value>) -> _Callback {
        _Callback(follower: adopter, body: _NoBody()) { callback, result, cancelled, work in
            let adopter = callback.follower(as: Promise<Value>.self)
            if cancelled {
                adopter._cancelFromAncestor(&work)
            } else {
                adopter._settle(result._result(Value.self), &work)
            }
        }
    }
}

extension Promise {
    /// Runs `handler`, which settles this child, on `executor`, unless this
    /// child has been cancelled by the time it would start; meanwhile the
    /// child is recorded as in flight under its settled parent.
    ///
    /// Out of line and unspecialised: this is the path through an executor,
    /// where a dispatch costs far more than a generic call, and written into
    /// each handler it makes the compiler outline part of the `.inline`
    /// path, on every `then` + `fulfill`.
    @usableFromInline
    func _dispatchHandler(
        on executor: some Executor, evenIfCancelled: Bool = false, _ handler: @escaping @Sendable () -> Void
    ) {
        _markInFlight()
        executor.execute { [self] in
            if evenIfCancelled || isPending { handler() }
        }
    }
}
