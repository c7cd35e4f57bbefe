extension Promise {
    /// A child fulfilled with this promise's value `duration` after it is
    /// fulfilled; a rejection passes through at once.
    ///
    /// ```swift
    /// saved.delay(.seconds(1)).then(on: .main) { _ in banner.hide() }
    /// ```
    public func delay(_ duration: Duration) -> Promise<Value> {
        then(on: .inline) { value in Promise._fulfilled(with: value, after: duration) }
    }

    /// A promise fulfilled with `value` after `duration`. Cancelling it
    /// stops the timer.
    static func _fulfilled(with value: Value, after duration: Duration) -> Promise<Value> {
        let promise = Promise<Value>()
        let timer = _OneShotTimer(after: duration) { promise.fulfill(value) }
        promise._observe { _ in timer.cancel() }
        return promise
    }
}

extension Promise where Value == Void {
    /// A promise fulfilled after `duration`.
    ///
    /// ```swift
    /// Promise.delay(.milliseconds(250)).then { refresh() }
    /// ```
    public static func delay(_ duration: Duration) -> Promise<Void> {
        _fulfilled(with: (), after: duration)
    }
}
