/// A growable byte buffer whose storage does not move while a `uv_write`
/// reads it. Swift arrays promise no stable address outside
/// `withUnsafeBytes`, and libuv keeps the pointer until the write completes,
/// so the bytes live in memory this type allocates itself. Loop-thread only.
final class UVWriteBuffer {
    private(set) var base: UnsafeMutableRawPointer?
    private(set) var count = 0
    private(set) var capacity = 0

    init() {}

    deinit {
        base?.deallocate()
    }

    var isEmpty: Bool { count == 0 }

    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base, count: count)
    }

    /// Appends bytes. Must not be called while a write reads this buffer.
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        reserve(count + bytes.count)
        (base! + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        count += bytes.count
    }

    /// Forgets the contents; keeps the memory unless it grew large.
    func removeAll(keepingCapacityUpTo limit: Int = 256 * 1024) {
        count = 0
        if capacity > limit {
            base?.deallocate()
            base = nil
            capacity = 0
        }
    }

    /// Makes room for `needed` bytes in all, so that appending up to that
    /// many moves the contents no more.
    func reserve(_ needed: Int) {
        guard needed > capacity else { return }
        let newCapacity = max(needed, capacity * 2, 4096)
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let base {
            newBase.copyMemory(from: base, byteCount: count)
            base.deallocate()
        }
        base = newBase
        capacity = newCapacity
    }
}

@available(*, unavailable)
extension UVWriteBuffer: Sendable {}
