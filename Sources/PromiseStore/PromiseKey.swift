import Glibc

/// A promise id as a key: equal to another only when their UTF-8 bytes are,
/// so hashed and compared by Unicode code points.
///
/// A Swift `String` compares by canonical equivalence: "é" (U+00E9) equals
/// "e\u{301}", so with `String` keys an id spelled one way would "already
/// exist" when the other does, `wait` on one would be answered by the other,
/// and the journal, whose set of changed ids would take the second for the
/// first, would not write it. Ids
/// are names that programs exchange, not text to read: two spellings are two
/// ids, as they are to a file system.
///
/// ```swift
/// PromiseKey("caf\u{E9}") == PromiseKey("cafe\u{301}")   // false
/// "caf\u{E9}" == "cafe\u{301}"                             // true
/// ```
public struct PromiseKey: Hashable, Sendable {
    public let id: String

    public init(_ id: String) {
        self.id = id
    }

    public static func == (lhs: PromiseKey, rhs: PromiseKey) -> Bool {
        let right = rhs.id.utf8
        guard lhs.id.utf8.count == right.count else { return false }
        // Native strings hold their UTF-8 contiguously: compared with memcmp,
        // as String's own == does, not by a generic elementsEqual, byte by
        // byte (docs/PERFORMANCE.md).
        let contiguous = right.withContiguousStorageIfAvailable { utf8(of: lhs.id, equals: UnsafeRawBufferPointer($0)) }
        return contiguous ?? lhs.id.utf8.elementsEqual(right)
    }

    /// Whether the UTF-8 bytes of `id` are `bytes`.
    package static func utf8(of id: String, equals bytes: UnsafeRawBufferPointer) -> Bool {
        let utf8 = id.utf8
        let count = utf8.count
        guard count == bytes.count else { return false }
        guard count > 0 else { return true }
        let contiguous = utf8.withContiguousStorageIfAvailable { memcmp($0.baseAddress!, bytes.baseAddress!, count) == 0 }
        return contiguous ?? utf8.elementsEqual(bytes)
    }

    public func hash(into hasher: inout Hasher) {
        let bytes = id.utf8
        // The bytes alone: a key is hashed by itself, never after another
        // value whose end its length would have to mark, and combining it
        // would cost a round of the hasher per look-up, three per
        // create+resolve.
        let hashed: Void? = bytes.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            for byte in bytes { hasher.combine(byte) }
        }
    }
}

/// Promise ids, compared as ``PromiseKey``s, in no particular order.
///
/// ```swift
/// var leases: PromiseIDSet = []
/// leases.insert("caf\u{E9}")
/// leases.insert("cafe\u{301}").inserted   // true: another id
/// ```
package struct PromiseIDSet: Sequence, ExpressibleByArrayLiteral {
    private var storage: Set<PromiseKey> = []

    package init(arrayLiteral ids: String...) {
        for id in ids { storage.insert(PromiseKey(id)) }
    }

    package var count: Int { storage.count }

    @discardableResult
    package mutating func insert(_ id: String) -> (inserted: Bool, memberAfterInsert: String) {
        let (inserted, member) = storage.insert(PromiseKey(id))
        return (inserted, member.id)
    }

    @discardableResult
    package mutating func remove(_ id: String) -> String? {
        storage.remove(PromiseKey(id))?.id
    }

    package mutating func removeAll(keepingCapacity keep: Bool = false) {
        storage.removeAll(keepingCapacity: keep)
    }

    package func filter(_ isIncluded: (String) throws -> Bool) rethrows -> PromiseIDSet {
        var kept = PromiseIDSet()
        kept.storage = try storage.filter { try isIncluded($0.id) }
        return kept
    }

    package func makeIterator() -> LazyMapSequence<Set<PromiseKey>, String>.Iterator {
        storage.lazy.map(\.id).makeIterator()
    }
}
