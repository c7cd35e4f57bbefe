import Synchronization

/// Serial numbers for promises: unique and increasing within a process
/// (TheraLynx names promises by serial number).
@usableFromInline
enum _SerialNumbers {
    @usableFromInline
    static let counter = Atomic<UInt64>(0)

    @inlinable
    static func next() -> UInt64 {
        counter.wrappingAdd(1, ordering: .relaxed).newValue
    }
}
