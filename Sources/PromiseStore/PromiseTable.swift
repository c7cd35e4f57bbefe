/// Values by promise id, the ids compared by their UTF-8 bytes (as
/// ``PromiseKey``s are: two spellings of one text are two ids). What a slot
/// holds besides the hash is its `Slot`'s choice: a ``PromiseMap`` keeps
/// each id beside its value, a ``PromiseIndex`` finds it in the value (a
/// promise knows its id), in half the memory.
///
/// A hash table of its own rather than a `Dictionary<PromiseKey, Value>`:
/// every request looks an id up, and a dictionary hashes with SipHash (see
/// ``IDHash``) and keeps no hashes, so it compares the id's bytes with
/// every key its probe passes and hashes every key again whenever it grows
/// (docs/PERFORMANCE.md). This one keeps each key's hash beside it: a probe
/// compares bytes only when the hashes are equal, and growing moves slots
/// without hashing. Open addressing with linear probing, at most
/// three quarters full; a removal shifts the slots after it back, so that
/// no tombstone is left to lengthen later probes.
///
/// ```swift
/// var waiters = PromiseMap<[Waiter]>()
/// waiters["build", default: []].append(waiter)
/// waiters["build"]?.count   // 1
///
/// var entries = PromiseIndex<RemotePromise>()
/// entries[promise.id] = promise
/// ```
package struct PromiseTable<Slot: PromiseTableSlot> {
    package typealias Value = Slot.Value

    /// A power of two in length, or empty before the first insertion.
    private var slots: [Slot] = []
    package private(set) var count = 0

    package init() {}

    package var isEmpty: Bool { count == 0 }

    /// The values, in no particular order.
    package var values: [Value] { slots.compactMap(\.value) }

    package subscript(id: String) -> Value? {
        get {
            guard count > 0 else { return nil }
            let (index, found) = probe(id, IDHash.hash(id))
            return found ? slots[index].value : nil
        }
        _modify {
            let (hash, index, found) = locate(id)
            // Moved out and back, not modified in place through the array:
            // a value that is itself a collection stays uniquely referenced.
            var value = found ? slots[index].value.take() : nil
            defer {
                if found {
                    if value != nil {
                        slots[index].value = value.take()
                        assert(slots[index].hasKey(id), "a value stays under its own id")
                    } else {
                        remove(at: index)
                    }
                } else if let added = value.take() {
                    insert(Slot(hash: hash, key: id, value: added), probed: index)
                }
            }
            yield &value
        }
    }

    /// The value of the id whose UTF-8 bytes are `bytes`, found with no
    /// `String` made of them (see `LentPromiseID`).
    package subscript(bytes bytes: UnsafeRawBufferPointer) -> Value? {
        guard count > 0 else { return nil }
        let (index, found) = probe(IDHash.hash(bytes)) { $0.hasKey(bytes: bytes) }
        return found ? slots[index].value : nil
    }

    package subscript(id: String, default defaultValue: @autoclosure () -> Value) -> Value {
        get { self[id] ?? defaultValue() }
        _modify {
            let (hash, index, found) = locate(id)
            // Optional, so that the value can be moved back out of it after
            // the yield: `consume` of the yielded variable in the `defer`
            // released it twice (Swift 6.3, -Onone).
            var value = found ? slots[index].value.take() : defaultValue()
            defer {
                if found {
                    slots[index].value = value.take()
                    assert(slots[index].hasKey(id), "a value stays under its own id")
                } else {
                    insert(Slot(hash: hash, key: id, value: value.take()!), probed: index)
                }
            }
            yield &value!
        }
    }

    @discardableResult
    package mutating func removeValue(forKey id: String) -> Value? {
        guard count > 0 else { return nil }
        let (index, found) = probe(id, IDHash.hash(id))
        guard found else { return nil }
        let value = slots[index].value.take()
        remove(at: index)
        return value
    }

    /// Sets the value for `id`, returning the one it replaced: one hash and
    /// one probe, as assigning through the subscript.
    @discardableResult
    package mutating func updateValue(_ value: Value, forKey id: String) -> Value? {
        let (hash, index, found) = locate(id)
        if found {
            let replaced = slots[index].value.take()
            slots[index].value = value
            assert(slots[index].hasKey(id), "a value stays under its own id")
            return replaced
        }
        insert(Slot(hash: hash, key: id, value: value), probed: index)
        return nil
    }

    // MARK: The table

    /// `id`'s hash and where its probe ends: its slot when `found`, else
    /// the empty slot where it would go (0 in a table with no slots yet).
    private func locate(_ id: String) -> (hash: UInt64, index: Int, found: Bool) {
        let hash = IDHash.hash(id)
        guard !slots.isEmpty else { return (hash, 0, false) }
        let (index, found) = probe(id, hash)
        return (hash, index, found)
    }

    /// The slot holding `id`, or the empty slot where a probe for it ends.
    /// The table must have slots.
    private func probe(_ id: String, _ hash: UInt64) -> (index: Int, found: Bool) {
        probe(hash) { $0.hasKey(id) }
    }

    /// The slot whose key has hash `hash` and `matches`, or the empty slot
    /// where the probe ends.
    @inline(__always)
    private func probe(_ hash: UInt64, _ matches: (borrowing Slot) -> Bool) -> (index: Int, found: Bool) {
        slots.withUnsafeBufferPointer { slots in
            let mask = slots.count - 1
            var index = Int(truncatingIfNeeded: hash) & mask
            while true {
                let slotHash = slots[index].hash
                if slotHash == 0 { return (index, false) }
                if slotHash == hash && matches(slots[index]) { return (index, true) }
                index = (index + 1) & mask
            }
        }
    }

    /// Puts `slot` in the empty slot `index` its probe ended on, unless the
    /// table must grow first (then wherever its probe ends in the new one).
    private mutating func insert(_ slot: consuming Slot, probed index: Int) {
        if (count + 1) * 4 > slots.count * 3 {
            grow()
            slots[emptySlot(for: slot.hash)] = slot
        } else {
            assert(slots[index].hash == 0, "an insertion goes where the probe found no key")
            slots[index] = slot
        }
        count += 1
    }

    /// The first empty slot from `hash`'s own: where a key known to be absent goes.
    private func emptySlot(for hash: UInt64) -> Int {
        let mask = slots.count - 1
        var index = Int(truncatingIfNeeded: hash) & mask
        while slots[index].hash != 0 { index = (index + 1) & mask }
        return index
    }

    /// Doubles the table, moving every slot by its kept hash.
    private mutating func grow() {
        var old = Self.emptySlots(max(16, slots.count * 2))
        swap(&old, &slots)
        // Swapped in, not copied: a copy would retain each key and value,
        // and destroying the old table would release them again.
        for index in old.indices where old[index].hash != 0 {
            swap(&old[index], &slots[emptySlot(for: old[index].hash)])
        }
    }

    /// A table of `count` empty slots, on the kernel's usual small pages.
    ///
    /// Not on transparent huge pages (`madvise(MADV_HUGEPAGE)`), which make
    /// the thousands of page faults of a large table a few: on a virtual
    /// machine that hands free 2 MB blocks back to its host (virtio-balloon
    /// free page reporting), each huge page is memory the host must find and
    /// clear again, which costs the daemon more than the faults it saves
    /// (docs/PERFORMANCE.md).
    private static func emptySlots(_ count: Int) -> [Slot] {
        [Slot](repeating: .empty, count: count)
    }

    /// Empties slot `index`, then moves back each slot after it, up to the
    /// next empty one, that may go there (its own slot is not between
    /// them): every remaining key stays reachable from its own slot with no
    /// empty slot in between.
    private mutating func remove(at index: Int) {
        let mask = slots.count - 1
        var hole = index
        var next = (index + 1) & mask
        while slots[next].hash != 0 {
            let own = Int(truncatingIfNeeded: slots[next].hash) & mask
            if (next - own) & mask >= (next - hole) & mask {
                slots.swapAt(hole, next)
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole] = .empty
        count -= 1
    }
}

/// Values by promise id, each kept with its id.
package typealias PromiseMap<Value> = PromiseTable<KeyedSlot<Value>>

/// Objects that know their own id, by that id: the table keeps no copy of
/// it, so a slot is 16 bytes where a ``PromiseMap``'s is 32. For the
/// registry's promises: at half a million promises the table is 16 MB, not
/// 32, about 30 bytes less per promise, and a probe reads half as many
/// cache lines.
package typealias PromiseIndex<Value: PromiseIdentified> = PromiseTable<IdentifiedSlot<Value>>
