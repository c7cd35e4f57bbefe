internal import CLibUV

/// The bytes a connection has still to write, in order: short messages
/// copied into blocks the connection owns, long ones kept by reference to
/// the array they were written in. Loop thread only.
///
/// One notification line goes to every subscriber of a promise: kept by
/// reference, it takes its bytes once however many clients it waits for,
/// and queuing it copies nothing. Blocks have a bounded size and never move
/// once full, so that appending never copies what is already queued; a
/// buffer that grows by doubling would, and subscribers fed the same stream
/// would all double in the same turn (docs/PERFORMANCE.md, "Notifications
/// to clients that do not read").
///
/// ```swift
/// let queued = OutgoingBytes()
/// answer.withUnsafeBytes { queued.append($0) }   // copied
/// queued.append(shared: notification[...])      // by reference
/// let written = try queued.withBuffers { try pipe.tryWrite(buffers: UnsafeBufferPointer($0)) }
/// queued.removeFirst(written)
/// ```
final class OutgoingBytes {
    private enum Segment {
        case block(UVWriteBuffer)
        case shared(ArraySlice<UInt8>)

        var count: Int {
            switch self {
            case .block(let block): block.count
            case .shared(let bytes): bytes.count
            }
        }
    }

    /// A block takes copied messages until it holds this many bytes (a
    /// longer message gets a block of its own size).
    static let blockBytes = 64 * 1024
    /// Messages at least this long are kept by reference, not copied.
    static let sharedFrom = 16 * 1024
    /// An emptied block up to this size is kept for the next messages, as a
    /// connection's one buffer keeps its capacity.
    static let keptBlockBytes = 256 * 1024

    private var segments: [Segment] = []
    /// Segments before this index are written out.
    private var first = 0
    /// Bytes of `segments[first]` written out.
    private var offset = 0
    /// Bytes not written yet.
    private(set) var count = 0
    /// An empty block kept from the last ``removeAll(keepingCapacityUpTo:)``.
    private var spare: UVWriteBuffer?
    /// The buffer descriptions of the last ``withBuffers(_:)`` of several
    /// segments, emptied, its capacity kept for the next.
    private var scratch: [uv_buf_t] = []
    /// The scratch array keeps its capacity up to this many descriptions
    /// (what one `sendmsg` takes, 16 KB): a rare longer flush does not pin more.
    static let keptScratchBuffers = UVPipe.maxBuffersPerCall

    var isEmpty: Bool { count == 0 }

    /// Appends a copy of `bytes`.
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        count += bytes.count
        if case .block(let last) = segments.last, last.count + bytes.count <= max(Self.blockBytes, last.capacity) {
            last.append(bytes)
            return
        }
        let block = takeSpare() ?? UVWriteBuffer()
        block.append(bytes)
        segments.append(.block(block))
    }

    /// Appends `bytes` by reference when they are long, else a copy. The
    /// array they are in must not change while they are queued, which
    /// Swift's arrays ensure by copying on write.
    func append(shared bytes: ArraySlice<UInt8>) {
        guard bytes.count >= Self.sharedFrom else {
            bytes.withUnsafeBytes { append($0) }
            return
        }
        count += bytes.count
        segments.append(.shared(bytes))
    }

    /// Drops the first `written` bytes.
    func removeFirst(_ written: Int) {
        precondition(written <= count, "OutgoingBytes: more bytes written than queued")
        var left = written
        while left > 0 {
            let remaining = segments[first].count - offset
            if left < remaining {
                offset += left
                break
            }
            left -= remaining
            first += 1
            offset = 0
        }
        count -= written
        if count == 0 {
            removeAll()
        } else if first >= 64 && first * 2 >= segments.count {
            segments.removeFirst(first)
            first = 0
        }
    }

    /// Forgets the contents; keeps one emptied block of up to `limit` bytes.
    func removeAll(keepingCapacityUpTo limit: Int = OutgoingBytes.keptBlockBytes) {
        if spare == nil, limit > 0 {
            for case .block(let block) in segments where block.capacity <= limit {
                block.removeAll(keepingCapacityUpTo: limit)
                spare = block
                break
            }
        }
        if limit == 0 { spare = nil }
        segments.removeAll(keepingCapacity: segments.count <= 64)
        first = 0
        offset = 0
        count = 0
    }

    /// Calls `body` with the descriptions of the bytes not written yet, in
    /// order, valid during the call (the bytes themselves while they stay
    /// queued).
    func withBuffers<Result, Failure: Error>(
        _ body: (UnsafeMutableBufferPointer<uv_buf_t>) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        if segments.count - first == 1 {
            // Most often one block: no array to make.
            var buffer = self.buffer(at: first)
            return try withUnsafeMutablePointer(to: &buffer) { (pointer) throws(Failure) in
                try body(UnsafeMutableBufferPointer(start: pointer, count: 1))
            }
        }
        // The descriptions go in a scratch array kept from one call to the
        // next: a flush of several segments makes no allocation. It is
        // taken out for the call, so `body` may use this queue.
        var buffers: [uv_buf_t] = []
        swap(&buffers, &scratch)
        defer {
            buffers.removeAll(keepingCapacity: buffers.capacity <= Self.keptScratchBuffers)
            swap(&buffers, &scratch)
        }
        buffers.reserveCapacity(segments.count - first)
        for index in first..<segments.count { buffers.append(buffer(at: index)) }
        return try buffers.withUnsafeMutableBufferPointer { (pointer) throws(Failure) in try body(pointer) }
    }

    /// The description of what is left to write of segment `index`.
    private func buffer(at index: Int) -> uv_buf_t {
        let skip = index == first ? offset : 0
        switch segments[index] {
        case .block(let block):
            return Self.buffer(block.base! + skip, block.count - skip)
        case .shared(let bytes):
            // The array's storage stays where it is, unchanged, while the slice holds it.
            return bytes.withUnsafeBytes { Self.buffer($0.baseAddress! + skip, $0.count - skip) }
        }
    }

    private static func buffer(_ start: UnsafeRawPointer, _ count: Int) -> uv_buf_t {
        uv_buf_t(base: UnsafeMutablePointer(mutating: start.assumingMemoryBound(to: CChar.self)), len: count)
    }

    private func takeSpare() -> UVWriteBuffer? {
        defer { spare = nil }
        return spare
    }
}

@available(*, unavailable)
extension OutgoingBytes: Sendable {}
