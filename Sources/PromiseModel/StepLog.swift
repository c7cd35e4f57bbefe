/// The last `limit` bytes of one output stream of a step (its stdout or its
/// stderr), and how many bytes before them were cut off: what `logs` shows.
///
/// A ring: once `limit` bytes are held, each new byte overwrites the oldest,
/// so the memory held never passes `limit` (plus the allocator's rounding)
/// however much the step writes, and each byte costs one copy. Trimming a
/// growing array in steps instead would hold up to twice the limit between
/// trims.
///
/// ```swift
/// var log = StepLog(limit: 4)
/// log.append(Array("abcdef".utf8))
/// log.bytes      // "cdef"
/// log.dropped    // 2
/// ```
public struct StepLog: Sendable, Hashable {
    /// The most bytes kept.
    public let limit: Int
    /// The kept bytes; once full, the oldest is at `start`.
    private var storage: [UInt8] = []
    private var start = 0
    /// Bytes of the stream before the kept ones: cut from the front, or
    /// never received (``skip(_:)``).
    public private(set) var dropped = 0

    public init(limit: Int) {
        precondition(limit >= 0, "a log's limit is 0 or more bytes")
        self.limit = limit
    }

    /// A log as it was stored: its kept bytes (at most `limit` of them are
    /// kept: the last ones) and the count dropped before them.
    public init(limit: Int, bytes: [UInt8], dropped: Int) {
        self.init(limit: limit)
        self.dropped = max(0, dropped)
        append(bytes)
    }

    /// Bytes kept now.
    public var count: Int { storage.count }

    /// Bytes the stream has had in all: ``dropped`` plus ``count`` (at
    /// most `Int.max`: counts saturate rather than trap on a client's
    /// absurd `skipped`).
    public var total: Int { dropped.saturatingAdd(storage.count) }

    /// The kept bytes, oldest first.
    public var bytes: [UInt8] {
        start == 0 ? storage : Array(storage[start...] + storage[..<start])
    }

    /// Adds `bytes` at the end, cutting the oldest ones past ``limit``.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        var incoming = bytes[...]
        guard !incoming.isEmpty else { return }
        if incoming.count >= limit {
            // Nothing held survives: keep the end of `bytes` alone.
            dropped = dropped.saturatingAdd(storage.count + incoming.count - limit)
            storage = Array(incoming.suffix(limit))
            start = 0
            return
        }
        if storage.count < limit {
            let room = limit - storage.count
            let first = incoming.prefix(room)
            grow(toHold: storage.count + first.count)
            storage.append(contentsOf: first)
            incoming = incoming.dropFirst(first.count)
        }
        guard !incoming.isEmpty else { return }
        assert(storage.count == limit && incoming.count < limit, "the ring is overwritten only once full")
        dropped = dropped.saturatingAdd(incoming.count)
        // Two runs at most: to the end of the storage, then from its start.
        while !incoming.isEmpty {
            let run = min(incoming.count, limit - start)
            storage.replaceSubrange(start..<start + run, with: incoming.prefix(run))
            start = (start + run) % limit
            incoming = incoming.dropFirst(run)
        }
    }

    /// Notes that `count` bytes of the stream were lost before what comes
    /// next (a client that kept only a tail of what it sends): they count
    /// as dropped, and so does everything kept before them, which no longer
    /// joins what follows.
    public mutating func skip(_ count: Int) {
        guard count > 0 else { return }
        dropped = dropped.saturatingAdd(storage.count).saturatingAdd(count)
        storage = []
        start = 0
    }

    /// Lets go of the kept bytes, which count as dropped from now on (a log
    /// evicted to keep all logs within their memory budget).
    public mutating func dropKept() {
        dropped = dropped.saturatingAdd(storage.count)
        storage = []
        start = 0
    }

    /// Grows the storage by doubling, never past ``limit``: a step that
    /// writes ten bytes holds ten, and a full one exactly `limit`.
    private mutating func grow(toHold needed: Int) {
        guard storage.capacity < needed else { return }
        storage.reserveCapacity(min(limit, max(needed, storage.capacity * 2)))
    }

    public static func == (lhs: StepLog, rhs: StepLog) -> Bool {
        lhs.limit == rhs.limit && lhs.dropped == rhs.dropped && lhs.bytes == rhs.bytes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(limit)
        hasher.combine(dropped)
        hasher.combine(bytes)
    }
}

extension Int {
    /// `self + other`, or `Int.max` where that would overflow (both are 0 or more).
    package func saturatingAdd(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}

/// Where UTF-8 text may be cut: a chunk of output read from a pipe can end
/// inside a character, which would show as two replacement characters if
/// each half were decoded apart.
public enum UTF8Boundary {
    /// How many bytes at the end of `bytes` begin a character that is not
    /// complete yet (0 to 3): hold them back until more bytes come.
    ///
    /// ```swift
    /// UTF8Boundary.incompleteSuffixLength([0x61, 0xE2, 0x82])   // 2: "€" needs one more byte
    /// ```
    public static func incompleteSuffixLength(_ bytes: some BidirectionalCollection<UInt8>) -> Int {
        var length = 0
        var index = bytes.endIndex
        while index != bytes.startIndex && length < 4 {
            index = bytes.index(before: index)
            length += 1
            let byte = bytes[index]
            guard byte & 0xC0 == 0x80 else {
                let needed = byte >= 0xF0 && byte <= 0xF4 ? 4 : byte >= 0xE0 && byte < 0xF0 ? 3
                    : byte >= 0xC2 && byte < 0xE0 ? 2 : 1
                return needed > length ? length : 0
            }
        }
        return 0
    }
}

/// Which output stream of a step: its stdout or its stderr.
public enum StepStream: String, Sendable, Hashable, CaseIterable {
    case stdout
    case stderr
}
