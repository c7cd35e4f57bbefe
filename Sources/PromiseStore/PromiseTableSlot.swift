/// One slot of a ``PromiseTable``: an id's hash, its value, and whether it
/// is the slot of a given id. The table moves slots by their hash alone and
/// asks the slot about ids only when the hashes are equal.
package protocol PromiseTableSlot {
    associatedtype Value
    /// ``IDHash`` of the slot's id; 0 marks an empty slot.
    var hash: UInt64 { get }
    /// Nil in an empty slot, and in a full one only while the table has
    /// moved its value out to modify it.
    var value: Value? { get set }
    static var empty: Self { get }
    /// The slot of `value` under id `key`, whose hash is `hash`.
    init(hash: UInt64, key: String, value: Value)
    /// Whether this is the slot of `id`, compared by UTF-8 bytes.
    func hasKey(_ id: String) -> Bool
    /// Whether this is the slot of the id whose UTF-8 bytes are `bytes`.
    func hasKey(bytes: UnsafeRawBufferPointer) -> Bool
}

/// A ``PromiseMap``'s slot: the id kept beside the value (32 bytes with a
/// one-word value).
package struct KeyedSlot<Value>: PromiseTableSlot {
    package let hash: UInt64
    package let key: String
    package var value: Value?

    package static var empty: KeyedSlot { KeyedSlot(hash: 0, key: "", value: nil) }

    package init(hash: UInt64, key: String, value: Value) {
        self.init(hash: hash, key: key, value: .some(value))
    }

    private init(hash: UInt64, key: String, value: Value?) {
        self.hash = hash
        self.key = key
        self.value = value
    }

    package func hasKey(_ id: String) -> Bool { PromiseKey(key) == PromiseKey(id) }
    package func hasKey(bytes: UnsafeRawBufferPointer) -> Bool { PromiseKey.utf8(of: key, equals: bytes) }
}

/// An object that carries its own promise id, so that a ``PromiseIndex``
/// of them keeps no copy of it.
package protocol PromiseIdentified: AnyObject {
    /// Never changes while the object is in a table.
    var id: String { get }
}

/// A ``PromiseIndex``'s slot: the hash and the object (16 bytes); the id is
/// read from the object when the hashes are equal, which, with 64-bit
/// hashes, is nearly always for the object that is looked for, whose memory
/// the caller is about to read anyway.
package struct IdentifiedSlot<Value: PromiseIdentified>: PromiseTableSlot {
    package let hash: UInt64
    package var value: Value?

    package static var empty: IdentifiedSlot { IdentifiedSlot(hash: 0, value: nil) }

    package init(hash: UInt64, key: String, value: Value) {
        assert(PromiseKey(value.id) == PromiseKey(key), "an object goes in under its own id")
        self.init(hash: hash, value: .some(value))
    }

    private init(hash: UInt64, value: Value?) {
        self.hash = hash
        self.value = value
    }

    package func hasKey(_ id: String) -> Bool {
        guard let value else { return false }
        return PromiseKey(value.id) == PromiseKey(id)
    }

    package func hasKey(bytes: UnsafeRawBufferPointer) -> Bool {
        guard let value else { return false }
        return PromiseKey.utf8(of: value.id, equals: bytes)
    }
}
