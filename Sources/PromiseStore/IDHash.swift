/// The hash of a promise id's UTF-8 bytes, for ``PromiseTable``: a folded
/// multiply (each step multiplies two 64-bit words to 128 bits and folds the
/// halves together, as foldhash and Go's runtime maps do), keyed with
/// random seeds drawn once per process.
///
/// Written here rather than taken from `Hasher`, whose SipHash-1-3 (seeding,
/// one `combine(bytes:)`, finalizing) costs several times as much for a
/// short id, and every create+resolve pair hashes ids three times (more
/// while a table grows) (docs/PERFORMANCE.md). No package we may depend on
/// offers a keyed hash of bytes.
///
/// The seeds keep a client from choosing ids that collide unless it can
/// learn them, which it cannot from the daemon's answers (they never
/// depend on a table's order): the protection foldhash documents as
/// "minimal DoS resistance", which is what a daemon reached only by its
/// own user's processes (see `SocketFile`) needs.
///
/// ```swift
/// let slot = Int(truncatingIfNeeded: IDHash.hash("build")) & (capacity - 1)
/// ```
package enum IDHash {
    /// Four random words, drawn at the first hash.
    private static let seeds: (UInt64, UInt64, UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next(), generator.next(), generator.next())
    }()

    /// The hash of `id`'s UTF-8 bytes; never 0.
    @inline(__always)
    package static func hash(_ id: String) -> UInt64 {
        if let hash = id.utf8.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) { return hash }
        var copy = id  // Not stored contiguously (bridged): made native.
        return copy.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }

    /// The hash of `bytes`; never 0, which ``PromiseTable`` keeps for an empty slot.
    @inline(__always)
    package static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let seeds = Self.seeds
        let count = bytes.count
        var hash = seeds.0 ^ UInt64(truncatingIfNeeded: count)
        if count <= 16 {
            let (low, high) = shortWords(bytes)
            hash = fold(low ^ seeds.1, high ^ hash)
        } else {
            // 16 bytes a step; the last step takes the final 16, which may
            // overlap the step before (the length, in the seed, tells apart
            // ids that differ only in where they would end).
            var offset = 0
            while count - offset > 16 {
                hash = fold(load(bytes, offset) ^ seeds.1, load(bytes, offset + 8) ^ hash)
                offset += 16
            }
            hash = fold(load(bytes, count - 16) ^ seeds.2, load(bytes, count - 8) ^ hash)
        }
        hash = fold(hash, seeds.3)
        return hash == 0 ? 1 : hash
    }

    /// Up to 16 bytes as two words, every byte in one of them: overlapping
    /// loads, as many as the length allows (the length is hashed besides).
    @inline(__always)
    private static func shortWords(_ bytes: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        let count = bytes.count
        if count >= 8 { return (load(bytes, 0), load(bytes, count - 8)) }
        if count >= 4 {
            let first = UInt64(bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
            let last = UInt64(bytes.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))
            return (first, last)
        }
        guard count > 0 else { return (0, 0) }
        let first = UInt64(bytes[0]), middle = UInt64(bytes[count / 2]), last = UInt64(bytes[count - 1])
        return (first << 16 | middle << 8 | last, 0)
    }

    @inline(__always)
    private static func load(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
        bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
    }

    /// The 128-bit product of two words, its halves folded into one.
    @inline(__always)
    private static func fold(_ left: UInt64, _ right: UInt64) -> UInt64 {
        let product = left.multipliedFullWidth(by: right)
        return product.high ^ product.low
    }
}
