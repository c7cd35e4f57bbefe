import Foundation

/// A log of values appended from any thread, read back in append order.
///
/// Handlers in these tests run on other threads; the log is how a test sees what ran and in
/// which order without a data race.
// @unchecked Sendable: every access to `items` holds `lock` (an NSLock, which ThreadSanitizer sees).
final class Recorder<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Element] = []

    init() {}

    func append(_ element: Element) {
        lock.withLock { items.append(element) }
    }

    var values: [Element] { lock.withLock { items } }
    var count: Int { lock.withLock { items.count } }
}

/// A counter shared between threads.
// @unchecked Sendable: `count` is only touched with `lock` held.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count: Int

    init(_ start: Int = 0) { count = start }

    /// Adds `delta` and returns the new value.
    @discardableResult
    func add(_ delta: Int = 1) -> Int {
        lock.withLock {
            count += delta
            return count
        }
    }

    var value: Int { lock.withLock { count } }
}

/// One value shared between threads, read and written under a lock.
// @unchecked Sendable: `stored` is only touched with `lock` held.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&stored) }
    }
}

/// Errors the tests reject promises with, so an assertion can tell them apart exactly.
enum TestError: Error, Equatable {
    case boom
    case other(Int)
}
