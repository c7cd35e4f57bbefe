/// What a ``PromiseWatch`` tells: a watched promise settled, or moved on.
///
/// ```swift
/// for try await event in remote.watch(["build/lib"]) {
///     switch event {
///     case .settled(let record): print(record.id, record.state)
///     case .progress(let id, let fraction, let message): print(id, fraction, message ?? "")
///     }
/// }
/// ```
public enum PromiseEvent: Sendable, Hashable {
    /// The promise settled: its record. Told once per id.
    case settled(PromiseRecord)
    /// The pending promise's progress moved to `fraction` (0…1), with the last message given.
    case progress(id: String, fraction: Double, message: String?)

    /// The id of the promise this event is about.
    public var id: String {
        switch self {
        case .settled(let record): return record.id
        case .progress(let id, _, _): return id
        }
    }
}
