import Foundation

/// An operation queue runs each handler as a block operation, honouring the
/// queue's `maxConcurrentOperationCount` and suspension.
///
/// ```swift
/// let queue = OperationQueue()
/// queue.maxConcurrentOperationCount = 1
/// promise.then(on: queue) { value in save(value) }
/// ```
extension OperationQueue: Executor {
    public func execute(_ work: @escaping @Sendable () -> Void) {
        addOperation(work)
    }
}
