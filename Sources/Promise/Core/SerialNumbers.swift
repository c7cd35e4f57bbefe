import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Serial numbers for promises: unique within a process, and increasing in
/// creation order on each thread (TheraLynx names promises by serial number).
///
/// Each thread takes its numbers from a block of its own (`blockSize` of
/// them, reserved with one atomic add on the shared counter), so numbering a
/// promise costs no atomic read-modify-write, which would hold the
/// processor's pipeline on every promise (docs/PERFORMANCE.md). So promises
/// made on different threads are not ordered by their numbers.
///
/// The counter's two top bits are not part of the number. Bit 63 is the
/// leak report's switch (``PromiseLeakReport/isEnabled``); bit 62 says that
/// the environment variable `PROMISE_LEAK_REPORT` has not been read yet. A
/// pending promise reads both with a plain load of the counter as it is
/// numbered: the check costs it a mask and a branch. The environment is not
/// read in the counter's initialiser, which would put a lazy-initialisation
/// check on every access to the counter.
@usableFromInline
enum _SerialNumbers {
    /// The first number of the next block to hand out, plus `flagBits`.
    @usableFromInline
    static let counter = Atomic<UInt64>(environmentUnreadBit)

    /// How many numbers a thread takes at a time.
    static var blockSize: UInt64 { 1_024 }

    /// The key of each thread's block (two `UInt64`s: its next number and
    /// the end of its block; freed when the thread exits), plus 1; 0 until
    /// the first promise is numbered. An atomic rather than a lazily made
    /// `static let`, whose every read goes through `swift_once`.
    static let blockKeyPlusOne = Atomic<UInt32>(0)

    /// The counter's bit that is the leak report's switch.
    @usableFromInline
    static var leakCheckBit: UInt64 { 1 << 63 }

    /// Set until `PROMISE_LEAK_REPORT` has been read (or the switch set).
    @usableFromInline
    static var environmentUnreadBit: UInt64 { 1 << 62 }

    /// The bits of the counter that are not the serial number.
    @usableFromInline
    static var flagBits: UInt64 { leakCheckBit | environmentUnreadBit }

    /// The next serial number of this thread, plus the counter's `flagBits`.
    @usableFromInline
    static func next() -> UInt64 {
        let flags = counter.load(ordering: .relaxed) & flagBits
        let keyPlusOne = blockKeyPlusOne.load(ordering: .acquiring)
        if keyPlusOne != 0, let raw = pthread_getspecific(pthread_key_t(keyPlusOne - 1)) {
            let block = raw.assumingMemoryBound(to: UInt64.self)
            let number = block[0]
            if number != block[1] {
                block[0] = number + 1
                return number | flags
            }
        }
        return nextInNewBlock() | flags
    }

    /// Takes a new block for this thread (making the key and the thread's
    /// block first if need be) and returns its first number. Numbers start
    /// at 1: 0 means "no parent" (see `Promise._parentSerial`).
    @inline(never)
    static func nextInNewBlock() -> UInt64 {
        var keyPlusOne = blockKeyPlusOne.load(ordering: .acquiring)
        if keyPlusOne == 0 { keyPlusOne = makeBlockKey() }
        let key = pthread_key_t(keyPlusOne - 1)
        let block: UnsafeMutablePointer<UInt64>
        if let raw = pthread_getspecific(key) {
            block = raw.assumingMemoryBound(to: UInt64.self)
        } else {
            guard let raw = malloc(2 * MemoryLayout<UInt64>.size) else { fatalError("out of memory") }
            block = raw.bindMemory(to: UInt64.self, capacity: 2)
            pthread_setspecific(key, raw)
        }
        let reserved = counter.wrappingAdd(blockSize, ordering: .relaxed).oldValue & ~flagBits
        let start = max(reserved, 1)
        block[0] = start + 1
        block[1] = reserved + blockSize
        return start
    }

    /// Makes the key of the threads' blocks, once: a thread that loses the
    /// race to publish its key deletes it and takes the winner's.
    static func makeBlockKey() -> UInt32 {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { block in free(block) }
        precondition(status == 0, "pthread_key_create failed: \(status)")
        let (exchanged, current) = blockKeyPlusOne.compareExchange(
            expected: 0, desired: UInt32(key) + 1, successOrdering: .releasing, failureOrdering: .acquiring)
        if exchanged { return UInt32(key) + 1 }
        pthread_key_delete(key)
        return current
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
        leakCheckApplies(counter.load(ordering: .relaxed))
    }
}
