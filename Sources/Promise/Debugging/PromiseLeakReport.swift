#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds promises that will never settle: a debugging aid, off by default.
///
/// A promise that nobody settles is invisible: whatever waits on it waits
/// for ever, silently. While the report is on, it watches every promise
/// made pending (`Promise()` and every `then`, `recover`, `always` child)
/// and shows such promises two ways:
///
/// - **Freed while pending, with handlers on it.** When the last reference
///   to a watched promise goes while it is still pending and handlers wait
///   on it, nothing can ever run them: the report hands a
///   ``LeakedPromise`` (name, serial number, age, chain) to ``handler``,
///   which writes it to standard error unless you set another (swift-nio
///   traps in this case in debug builds; a handler may `fatalError` too).
/// - **Alive and pending for too long.** A pending chain that nobody
///   settles is usually not freed at all: a `then` child holds its parent
///   and the parent holds the child's handler, so an abandoned chain keeps
///   itself alive. ``pendingPromises(olderThan:)`` lists the watched
///   promises that are still alive and pending, oldest first, with their
///   age and chain — this is where abandoned chains show up.
///
/// ```swift
/// PromiseLeakReport.isEnabled = true          // or PROMISE_LEAK_REPORT=1
/// PromiseLeakReport.handler = { leak in logger.warning("\(leak)") }
///
/// // Later, from a debug command or a timer:
/// for stuck in PromiseLeakReport.pendingPromises(olderThan: .seconds(60)) {
///     print(stuck)   // Promise<Data> #812 "fetch" generation 0: pending, for 73 s
/// }
/// ```
///
/// Only promises made while the report is on are watched; turning it on
/// later does not reach promises made before. Setting the environment
/// variable `PROMISE_LEAK_REPORT=1` turns it on from the start of the
/// process.
///
/// Off, it costs next to nothing: a promise learns whether it is on from
/// the atomic add that gives it its serial number (a mask and a branch, no
/// load of its own), and its deinit tests one flag. On, each pending promise costs an entry in a process-wide table
/// (a lock, a weak reference, a clock read) until it is freed: keep it for
/// debugging and tests.
public enum PromiseLeakReport {
    /// Whether pending promises made from now on are watched.
    ///
    /// ```swift
    /// PromiseLeakReport.isEnabled = true
    /// ```
    public static var isEnabled: Bool {
        get { _SerialNumbers.isLeakCheckOn }
        set { _SerialNumbers.setLeakCheck(newValue) }
    }

    /// Called with each watched promise freed while pending with handlers
    /// on it, on the thread that released it, after it is gone. By default
    /// writes the report's ``LeakedPromise/description`` to standard error.
    ///
    /// ```swift
    /// PromiseLeakReport.handler = { leak in
    ///     assertionFailure("\(leak)")   // trap in debug builds, as swift-nio does
    /// }
    /// ```
    public static var handler: @Sendable (LeakedPromise) -> Void {
        get { _handler.withLock { $0 } }
        set { _handler.withLock { $0 = newValue } }
    }

    /// The watched promises that are alive and still pending, made at least
    /// `age` ago, oldest first.
    ///
    /// A chain that nobody will settle keeps itself alive (each `then` child
    /// holds its parent, each parent its child's handler), so it never shows
    /// as freed: look for it here.
    ///
    /// ```swift
    /// let stuck = PromiseLeakReport.pendingPromises(olderThan: .seconds(30))
    /// ```
    ///
    /// - Parameter age: The youngest age listed; `.zero` lists all.
    /// - Returns: One ``PendingPromise`` each; empty while the report has
    ///   never been on.
    public static func pendingPromises(olderThan age: Duration = .zero) -> [PendingPromise] {
        _LeakRegistry.pendingPromises(olderThan: age)
    }

    static let _handler = _Locked<@Sendable (LeakedPromise) -> Void>(writeToStandardError)

    /// The default ``handler``.
    @Sendable
    static func writeToStandardError(_ leak: LeakedPromise) {
        let text = "\(leak)\n"
        var remaining = Array(text.utf8)[...]
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            guard written > 0 else { return }
            remaining = remaining.dropFirst(written)
        }
    }
}

extension PromiseLeakReport {
    /// A promise freed while pending with handlers on it: they will never run.
    public struct LeakedPromise: Sendable, CustomStringConvertible {
        /// The promise's ``Promise/serialNumber``.
        public let serialNumber: UInt64
        /// The promise's ``Promise/name``, if it had one.
        public let name: String?
        /// `Promise<Value>`, spelled out.
        public let typeName: String
        /// How many handlers were waiting on it.
        public let handlerCount: Int
        /// How long it lived.
        public let age: Duration
        /// The promise and the pending promises it waited on, one per line,
        /// as ``Promise/debugDescription`` shows them.
        public let chain: String

        /// Several lines: what leaked, then its chain.
        ///
        /// ```
        /// Promise leaked: freed while pending, 2 handlers will never run (age 0.4 s)
        ///   Promise<Int> #12 "parse" generation 2: pending
        ///     ← Promise<String> #11 "fetch" generation 1: pending
        /// ```
        public var description: String {
            let handlers = handlerCount == 1 ? "1 handler" : "\(handlerCount) handlers"
            let chainLines = chain.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
            return "Promise leaked: freed while pending, \(handlers) will never run (age \(_seconds(age)))\n"
                + chainLines
        }
    }

    /// A watched promise still alive and pending.
    public struct PendingPromise: Sendable, CustomStringConvertible {
        /// The promise's ``Promise/serialNumber``.
        public let serialNumber: UInt64
        /// The promise's ``Promise/name``, if it has one.
        public let name: String?
        /// `Promise<Value>`, spelled out.
        public let typeName: String
        /// How long ago it was made.
        public let age: Duration
        /// The promise and the pending promises it waits on, one per line,
        /// as ``Promise/debugDescription`` shows them.
        public let chain: String

        /// The chain, its first line ending with the age.
        ///
        /// ```
        /// Promise<Data> #812 "fetch" generation 0: pending, for 73.2 s
        /// ```
        public var description: String {
            var lines = chain.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if !lines.isEmpty { lines[0] += ", for \(_seconds(age))" }
            return lines.joined(separator: "\n")
        }
    }
}

/// `age` in seconds with one decimal, for people.
func _seconds(_ age: Duration) -> String {
    let tenths = age.components.seconds * 10 + age.components.attoseconds / 100_000_000_000_000_000
    return "\(tenths / 10).\(tenths % 10) s"
}
