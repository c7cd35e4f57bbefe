import Dispatch

/// A dispatch queue runs handlers asynchronously, as a barrier block.
///
/// On a serial queue a barrier is an ordinary block. On a concurrent queue
/// it keeps the handler from overlapping any other block of that queue, as
/// RXPromise does: handlers that share the queue's data need no other lock.
///
/// ```swift
/// let cache = DispatchQueue(label: "cache", attributes: .concurrent)
/// promise.then(on: cache) { value in entries[key] = value }
/// ```
extension DispatchQueue: Executor {
    public func execute(_ work: @escaping @Sendable () -> Void) {
        async(flags: .barrier, execute: work)
    }
}
