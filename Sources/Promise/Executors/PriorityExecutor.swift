import Dispatch

/// Runs work on a global queue of a given priority (TheraLynx
/// `runHighPriority` / `runLowPriority` / `runLowestPriority`).
///
/// ```swift
/// promise.then(on: .lowestPriority) { value in writeToCache(value) }
/// ```
public struct PriorityExecutor: Executor {
    /// How urgent the work is.
    public enum Level: Sendable, Hashable {
        /// User-initiated quality of service.
        case high
        /// Utility quality of service.
        case low
        /// Background quality of service.
        case lowest
    }

    public let level: Level

    public init(_ level: Level) {
        self.level = level
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        let qos: DispatchQoS.QoSClass
        switch level {
        case .high: qos = .userInitiated
        case .low: qos = .utility
        case .lowest: qos = .background
        }
        DispatchQueue.global(qos: qos).async(execute: work)
    }
}

extension Executor where Self == PriorityExecutor {
    /// Global work at user-initiated priority.
    public static var highPriority: PriorityExecutor { PriorityExecutor(.high) }
    /// Global work at utility priority.
    public static var lowPriority: PriorityExecutor { PriorityExecutor(.low) }
    /// Global work at background priority.
    public static var lowestPriority: PriorityExecutor { PriorityExecutor(.lowest) }
}
