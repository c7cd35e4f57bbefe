import Foundation

/// Marks the current thread while a piece of test code runs, so that a handler can tell
/// whether it was called synchronously from inside that code (on the caller's stack).
///
/// A thread-dictionary entry is per thread: a handler that runs on another thread, or on the
/// same thread after the marked code returned, does not see it.
enum CallerStack {
    private static let key = "PromiseTests.CallerStack"

    @discardableResult
    static func run<T>(_ body: () throws -> T) rethrows -> T {
        let dictionary = Thread.current.threadDictionary
        let depth = (dictionary[key] as? Int) ?? 0
        dictionary[key] = depth + 1
        defer {
            if depth == 0 {
                Thread.current.threadDictionary.removeObject(forKey: key)
            } else {
                Thread.current.threadDictionary[key] = depth
            }
        }
        return try body()
    }

    /// True when called from inside `run` on this thread.
    static var isInside: Bool {
        Thread.current.threadDictionary[key] != nil
    }
}

/// An identifier of the calling thread, comparable between threads.
func currentThreadID() -> UInt64 {
    #if os(Linux)
    return UInt64(pthread_self())
    #else
    return UInt64(UInt(bitPattern: pthread_self()))
    #endif
}

/// Runs `body(index)` on `count` new threads that all start at the same moment, and waits
/// (polling, bounded by `timeout`) until every one has returned. Returns false if some thread
/// did not finish in time.
///
/// Plain threads instead of Swift Tasks: the stress tests block, and the cooperative pool has
/// only as many threads as cores.
@discardableResult
func runOnThreads(
    _ count: Int,
    timeout: Duration = .seconds(20),
    _ body: @escaping @Sendable (Int) -> Void
) async -> Bool {
    let finished = Counter()
    let startGate = DispatchSemaphore(value: 0)
    for index in 0..<count {
        let thread = Thread {
            startGate.wait()
            body(index)
            finished.add()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    for _ in 0..<count { startGate.signal() }
    return await eventually(timeout: timeout) { finished.value == count }
}

/// Runs blocking `body` on a new thread of its own and returns its outcome, or nil if it has
/// not returned within `timeout`. Keeps blocking calls such as `wait()` off the cooperative
/// pool. `stackSize` makes the thread's stack small on purpose, so that code that recurses once
/// per link of a chain overflows it instead of passing on a generous default stack.
func onNewThread<T: Sendable>(
    timeout: Duration = .seconds(10),
    stackSize: Int? = nil,
    _ body: @escaping @Sendable () throws -> T
) async -> Result<T, any Error>? {
    let box = LockedBox<Result<T, any Error>?>(nil)
    let thread = Thread {
        let result = Result { try body() }
        box.value = result
    }
    if let stackSize { thread.stackSize = stackSize }
    thread.start()
    guard await eventually(timeout: timeout, { box.value != nil }) else { return nil }
    return box.value
}

/// Runs `body` on a new thread of its own once `delay` has passed.
///
/// Tests that settle a promise "a moment later" use this rather than
/// `DispatchQueue.global().asyncAfter`: in a full parallel run under ThreadSanitizer, other
/// tests can keep the global queue's few threads busy for seconds, and a settle queued there
/// arrived after the 5-second wait it was meant to end had given up (CI, stop 35).
func afterDelay(_ delay: Duration, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        Thread.sleep(forTimeInterval: delay / .seconds(1))
        body()
    }
    thread.start()
}
