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
/// The counter's two top bits are not part of the number. Bit 63 is the
/// leak report's switch (``PromiseLeakReport/isEnabled``); bit 62 says that
/// the environment variable `PROMISE_LEAK_REPORT` has not been read yet. A
/// pending promise learns both from the same atomic add that numbers it: the
/// check costs it a mask and a branch, and no load of its own. (Reading the
/// environment in the counter's initialiser instead made every access to
/// the counter go through a lazy-initialisation check: callgrind, 22
/// instructions per `then` + `fulfill`.)
@usableFromInline
enum _SerialNumbers {
    @usableFromInline
    static let counter = Atomic<UInt64>(environmentUnreadBit)

    /// The counter's bit that is the leak report's switch.
    @usableFromInline
    static var leakCheckBit: UInt64 { 1 << 63 }

    /// Set until `PROMISE_LEAK_REPORT` has been read (or the switch set).
    @usableFromInline
    static var environmentUnreadBit: UInt64 { 1 << 62 }

    /// The bits of the counter that are not the serial number.
    @usableFromInline
    static var flagBits: UInt64 { leakCheckBit | environmentUnreadBit }

    /// The next value of the counter: a serial number, plus `flagBits`.
    @inlinable
    static func next() -> UInt64 {
        counter.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Whether a promise numbered with `value`, which has a flag bit set,
    /// is watched by the leak report. Out of line: rare.
    @usableFromInline
    static func leakCheckApplies(_ value: UInt64) -> Bool {
        if value & environmentUnreadBit != 0 { return readEnvironment() }
        return value & leakCheckBit != 0
    }

    /// Applies `PROMISE_LEAK_REPORT=1` once, unless the switch was set in
    /// code first; returns whether the report is on.
    @discardableResult
    static func readEnvironment() -> Bool {
        let requested = getenv("PROMISE_LEAK_REPORT").map { String(cString: $0) == "1" } ?? false
        var current = counter.load(ordering: .relaxed)
        while current & environmentUnreadBit != 0 {
            let desired = (current & ~environmentUnreadBit) | (requested ? leakCheckBit : 0)
            let (exchanged, original) = counter.compareExchange(
                expected: current, desired: desired, ordering: .relaxed)
            if exchanged { return requested }
            current = original
        }
        return current & leakCheckBit != 0
    }

    /// Sets the leak report's switch, overriding the environment.
    static func setLeakCheck(_ on: Bool) {
        counter.bitwiseAnd(~environmentUnreadBit, ordering: .relaxed)
        if on {
            counter.bitwiseOr(leakCheckBit, ordering: .relaxed)
        } else {
            counter.bitwiseAnd(~leakCheckBit, ordering: .relaxed)
        }
    }

    /// Whether the leak report is on.
    static var isLeakCheckOn: Bool {
        if counter.load(ordering: .relaxed) & environmentUnreadBit != 0 { return readEnvironment() }
        return counter.load(ordering: .relaxed) & leakCheckBit != 0
    }
}
