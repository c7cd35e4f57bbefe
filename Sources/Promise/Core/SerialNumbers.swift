import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Serial numbers for promises: unique and increasing within a process
/// (TheraLynx names promises by serial number).
///
/// The counter's top bit is not part of the number: it says whether the
/// leak report is on (``PromiseLeakReport/isEnabled``). A promise learns it
/// from the same atomic add that numbers it, so the check costs a pending
/// promise's creation a mask and a branch, and no load of its own.
@usableFromInline
enum _SerialNumbers {
    /// Starts with the leak report on when the environment variable
    /// `PROMISE_LEAK_REPORT` is `1`, so that promises made before `main`
    /// gets to set ``PromiseLeakReport/isEnabled`` are watched too.
    @usableFromInline
    static let counter = Atomic<UInt64>(leakCheckRequestedByEnvironment ? leakCheckBit : 0)

    static var leakCheckRequestedByEnvironment: Bool {
        guard let value = getenv("PROMISE_LEAK_REPORT") else { return false }
        return String(cString: value) == "1"
    }

    /// The counter's bit that is the leak report's switch.
    @usableFromInline
    static var leakCheckBit: UInt64 { 1 << 63 }

    /// The next value of the counter: a serial number, plus `leakCheckBit`
    /// when the leak report is on.
    @inlinable
    static func next() -> UInt64 {
        counter.wrappingAdd(1, ordering: .relaxed).newValue
    }
}
