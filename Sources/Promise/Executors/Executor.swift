/// Where a handler runs.
///
/// Every `then`, `recover`, `always`, `onCancel` and `onProgress` takes an
/// executor. Handlers never run on the caller's stack, neither inside `then`
/// nor inside `fulfill`, unless the executor is ``InlineExecutor``
/// (`.inline`). Handlers registered on one *serial* executor run in the order
/// they were registered.
///
/// ```swift
/// let queue = DispatchQueue(label: "work")
/// promise.then(on: queue) { value in store(value) }
/// promise.then(on: .inline) { value in value * 2 }   // no thread hop
/// ```
///
/// Provided: ``InlineExecutor`` (`.inline`), ``DefaultExecutor``
/// (`.default`), ``MainExecutor`` (`.main`), `DispatchQueue`,
/// `OperationQueue`, ``ThreadExecutor`` and ``PriorityExecutor``
/// (`.highPriority`, `.lowPriority`, `.lowestPriority`).
public protocol Executor: Sendable {
    /// Runs `work` once, now or later, on this executor's thread(s).
    func execute(_ work: @escaping @Sendable () -> Void)
}
