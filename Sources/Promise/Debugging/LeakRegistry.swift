import Foundation

/// The promises ``PromiseLeakReport`` watches: every promise made pending
/// while it was on, by serial number, until freed. Weak references, so
/// watching keeps nothing alive; entries found settled when listing are
/// dropped then.
enum _LeakRegistry {
    struct Entry: Sendable {
        weak var promise: (any _LeakWatched)?
        let made: ContinuousClock.Instant
    }

    static let entries = _Locked<[UInt64: Entry]>([:])

    static func watch(_ promise: any _LeakWatched, serialNumber: UInt64) {
        let entry = Entry(promise: promise, made: .now)
        entries.withLock { $0[serialNumber] = entry }
    }

    /// Forgets a promise being freed; returns when it was made.
    static func forget(serialNumber: UInt64) -> ContinuousClock.Instant? {
        entries.withLock { $0.removeValue(forKey: serialNumber)?.made }
    }

    static func pendingPromises(olderThan age: Duration) -> [PromiseLeakReport.PendingPromise] {
        let now = ContinuousClock.now
        let snapshot = entries.withLock { entries in
            entries.filter { now - $0.value.made >= age }.map { ($0.key, $0.value) }
        }
        // Weak references are read outside the lock: reading one takes a
        // strong reference, and releasing it may free the promise, whose
        // deinit comes back here.
        var pending: [(made: ContinuousClock.Instant, promise: PromiseLeakReport.PendingPromise)] = []
        var settled: [UInt64] = []
        for (serialNumber, entry) in snapshot {
            guard let promise = entry.promise else { continue }
            guard let chain = promise._pendingChain else {
                settled.append(serialNumber)
                continue
            }
            pending.append((entry.made, PromiseLeakReport.PendingPromise(
                serialNumber: serialNumber, name: promise._leakName, typeName: promise._typeName,
                age: now - entry.made, chain: chain)))
        }
        if !settled.isEmpty {
            entries.withLock { entries in
                for serialNumber in settled { entries.removeValue(forKey: serialNumber) }
            }
        }
        return pending.sorted { ($0.made, $0.promise.serialNumber) < ($1.made, $1.promise.serialNumber) }
            .map(\.promise)
    }
}

/// A promise as the leak report sees it, whatever its value type.
protocol _LeakWatched: AnyObject, Sendable {
    /// ``Promise/debugDescription`` while pending; nil once settled.
    var _pendingChain: String? { get }
    var _leakName: String? { get }
    var _typeName: String { get }
}
