import PromiseJSON

/// The JSON text of large values, written once and shared by every answer
/// and notification that carries them, so that the waiters of a large
/// value do not each serialize a copy of their own in one loop turn.
///
/// A value's text is kept with the promise that owns the value (a `then`
/// child that shares its parent's value uses the parent's). Only values of
/// at least ``threshold`` bytes are kept: smaller ones cost less to write
/// again than to hold. The texts kept take at most `budget` bytes together;
/// past it the oldest are let go (written again if asked for). Loop thread
/// only, as the registry.
struct ValueTextCache {
    /// Values shorter than this are written each time.
    static let threshold = 64 << 10

    private struct Kept {
        weak var owner: RemotePromise?
        let bytes: Int
    }

    let budget: Int
    /// Owners in the order their text was kept, from `start` on.
    private var kept: [Kept] = []
    private var start = 0
    private(set) var bytes = 0

    init(budget: Int) {
        self.budget = budget
    }

    /// The JSON text of `value`, the value `owner` holds: kept, or written
    /// now and kept if large. Nil for a value below ``threshold``, which the
    /// caller writes in place.
    mutating func text(of value: JSONValue, ownedBy owner: RemotePromise) -> [UInt8]? {
        if let text = owner.valueText { return text }
        // Counting stops at the threshold: a small value costs what it takes to walk it.
        guard value.serializedByteCount(upTo: Self.threshold) >= Self.threshold else { return nil }
        let text = JSONTextBuffer.bytes { value.write(to: &$0) }
        guard text.count <= budget else { return text }
        owner.valueText = text
        kept.append(Kept(owner: owner, bytes: text.count))
        bytes += text.count
        while bytes > budget { dropOldest() }
        return text
    }

    private mutating func dropOldest() {
        let oldest = kept[start]
        start += 1
        bytes -= oldest.bytes
        oldest.owner?.valueText = nil
        if start > 64 && start * 2 > kept.count {
            kept.removeFirst(start)
            start = 0
        }
    }
}
