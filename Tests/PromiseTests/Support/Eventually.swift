import Foundation
import Promise
import Testing

/// Polls `condition` until it holds or `timeout` has passed, and tells which.
///
/// Handlers on asynchronous executors finish "soon", not at a known instant. Every test that
/// waits for one waits through this (or a helper built on it), so that a broken core makes a
/// test fail in seconds instead of hanging the run.
func eventually(
    timeout: Duration = .seconds(30),
    _ condition: @Sendable () -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while true {
        if condition() { return true }
        if clock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
}

/// Whether `condition` still holds after `duration`: for "nothing happens" checks, which can
/// only be sampled. Returns false as soon as the condition stops holding.
func holds(
    for duration: Duration = .milliseconds(50),
    _ condition: @Sendable () -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: duration)
    while clock.now < deadline {
        if !condition() { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}

/// Runs `operation` in its own Task and returns its outcome, or nil if it has not finished
/// within `timeout` (the Task is then cancelled and left behind, so a hung await cannot hang
/// the test run).
func outcome<T: Sendable>(
    within timeout: Duration = .seconds(30),
    of operation: @escaping @Sendable () async throws -> T
) async -> Result<T, any Error>? {
    let box = LockedBox<Result<T, any Error>?>(nil)
    let task = Task {
        do {
            let value = try await operation()
            box.value = .success(value)
        } catch {
            box.value = .failure(error)
        }
    }
    if await eventually(timeout: timeout, { box.value != nil }) {
        return box.value
    }
    task.cancel()
    return nil
}

extension Promise {
    /// This promise's result once it has settled, or nil (and a recorded issue) if it is still
    /// pending after `timeout`. Polls `result`, so it does not depend on `value` or `wait`.
    func settled(
        within timeout: Duration = .seconds(30),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Result<Value, any Error>? {
        _ = await eventually(timeout: timeout) { !self.isPending }
        guard let result else {
            Issue.record("promise still pending after \(timeout)", sourceLocation: sourceLocation)
            return nil
        }
        return result
    }

    /// The value this promise is fulfilled with, or nil (and a recorded issue) if it rejects or
    /// stays pending.
    func fulfilledValue(
        within timeout: Duration = .seconds(30),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Value? {
        switch await settled(within: timeout, sourceLocation: sourceLocation) {
        case .success(let value)?:
            return value
        case .failure(let error)?:
            Issue.record("expected fulfilment, got rejection: \(error)", sourceLocation: sourceLocation)
            return nil
        case nil:
            return nil
        }
    }

    /// The error this promise is rejected with, or nil (and a recorded issue) if it fulfils or
    /// stays pending.
    func rejectionError(
        within timeout: Duration = .seconds(30),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> (any Error)? {
        switch await settled(within: timeout, sourceLocation: sourceLocation) {
        case .success(let value)?:
            Issue.record("expected rejection, got fulfilment: \(value)", sourceLocation: sourceLocation)
            return nil
        case .failure(let error)?:
            return error
        case nil:
            return nil
        }
    }

    /// The current value if already fulfilled, else nil. For `.inline` checks that must hold
    /// at once, without waiting.
    var fulfilledNow: Value? {
        if case .success(let value)? = result { return value }
        return nil
    }

    /// The current error if already rejected, else nil.
    var errorNow: (any Error)? {
        if case .failure(let error)? = result { return error }
        return nil
    }
}

/// Registers 50 `then` handlers on `executor`, fulfils, and returns the
/// order they ran in once all have (nil if they did not all run in time).
func registrationOrder(on executor: some Executor) async -> [Int]? {
    let order = Recorder<Int>()
    let promise = Promise<Int>()
    for index in 0..<50 { promise.then(on: executor) { _ in order.append(index) } }
    promise.fulfill(0)
    guard await eventually({ order.count == 50 }) else { return nil }
    return order.values
}
