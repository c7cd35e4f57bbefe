import Dispatch

/// The library's default: a private concurrent queue.
///
/// Handlers may run in parallel and in any order. Use a serial executor (a
/// serial `DispatchQueue`, ``ThreadExecutor``) when order matters.
///
/// ```swift
/// promise.then { value in heavyWork(value) }   // runs on .default
/// ```
public struct DefaultExecutor: Executor {
    @usableFromInline
    static let queue = DispatchQueue(label: "Promise.default", attributes: .concurrent)

    @inlinable
    public init() {}

    @inlinable
    public func execute(_ work: @escaping @Sendable () -> Void) {
        DefaultExecutor.queue.async(execute: work)
    }
}

extension Executor where Self == DefaultExecutor {
    /// The library's concurrent default executor.
    @inlinable
    public static var `default`: DefaultExecutor { DefaultExecutor() }
}
