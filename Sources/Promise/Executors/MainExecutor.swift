import Dispatch

/// Runs work on the main queue.
///
/// On Linux the main queue only runs while the main thread drains it
/// (`dispatchMain()`, `RunLoop.main.run()`, or an async `main`), as a
/// command-line tool's main thread often does not.
///
/// ```swift
/// promise.then(on: .main) { value in label.text = value }
/// ```
public struct MainExecutor: Executor {
    @inlinable
    public init() {}

    @inlinable
    public func execute(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue.main.async(execute: work)
    }
}

extension Executor where Self == MainExecutor {
    /// The main queue.
    @inlinable
    public static var main: MainExecutor { MainExecutor() }
}
