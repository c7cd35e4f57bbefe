/// JSON text being written: bytes appended through a pointer into memory on
/// the writer's stack, moved to the heap only if the text outgrows it.
///
/// Written by hand because the daemon's answers are written as dozens of
/// short appends (a record has ten members: a key, a value and punctuation
/// each), and `[UInt8].append(contentsOf:)` checks the array's uniqueness
/// and capacity on each and copies through a generic path, a large part of
/// writing a record (docs/PERFORMANCE.md). Here an append is a bounds check
/// and a copy, and the finished text is copied once into an array of
/// exactly its size. The appends are inlined into their callers, so that
/// an append makes no call.
///
/// ```swift
/// let text = JSONTextBuffer.bytes { text in
///     text.append("[")
///     JSONValue.int(7).write(to: &text)
///     text.append("]")
/// }
/// // Array("[7]".utf8)
/// ```
package struct JSONTextBuffer: ~Copyable {
    /// Stack room given to every text: an answer carrying a record, the
    /// daemon's commonest message, is 170 to 250 bytes.
    package static let stackCapacity = 512

    private var base: UnsafeMutableRawPointer
    private(set) var count = 0
    private var capacity: Int
    /// False while `base` is the caller's stack memory.
    private var ownsMemory = false

    private init(_ scratch: UnsafeMutableRawBufferPointer) {
        base = scratch.baseAddress!
        capacity = scratch.count
    }

    deinit {
        if ownsMemory { base.deallocate() }
    }

    /// The text that `write` appends, as an array of exactly its bytes.
    package static func bytes(_ write: (inout JSONTextBuffer) -> Void) -> [UInt8] {
        written(write, newline: false)
    }

    /// The text that `write` appends and a newline: a message as it goes on
    /// the wire, sent in one piece (see `RPCPeer.send(_:)`).
    package static func line(_ write: (inout JSONTextBuffer) -> Void) -> [UInt8] {
        written(write, newline: true)
    }

    /// Lends `body` the text that `write` appends and a newline, where it
    /// was written (on the stack, unless it outgrew it): for a message
    /// handed straight to a socket, with no array made to carry it there.
    package static func withLine<Result>(
        _ write: (inout JSONTextBuffer) -> Void, _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result {
        withUnsafeTemporaryAllocation(byteCount: stackCapacity, alignment: 1) { scratch in
            var text = JSONTextBuffer(scratch)
            write(&text)
            text.append(UInt8(ascii: "\n"))
            return body(UnsafeRawBufferPointer(start: text.base, count: text.count))
        }
    }

    private static func written(_ write: (inout JSONTextBuffer) -> Void, newline: Bool) -> [UInt8] {
        withUnsafeTemporaryAllocation(byteCount: stackCapacity, alignment: 1) { scratch in
            var text = JSONTextBuffer(scratch)
            write(&text)
            if newline { text.append(UInt8(ascii: "\n")) }
            return text.array()
        }
    }

    private func array() -> [UInt8] {
        // Not `init(unsafeUninitializedCapacity:)`: it is not specialised,
        // and looked up the array storage's type at run time on every call.
        var array: [UInt8] = []
        array.reserveCapacity(count)
        array.append(contentsOf: UnsafeRawBufferPointer(start: base, count: count))
        return array
    }

    @inline(__always)
    package mutating func append(_ byte: UInt8) {
        if count == capacity { grow(toHold: 1) }
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        if bytes.count > capacity - count { grow(toHold: bytes.count) }
        Self.copy(source, to: base + count, count: bytes.count)
        count += bytes.count
    }

    /// Copies `count` bytes: up to 16 inline, as two loads and two stores
    /// of a width that fits, overlapping in the middle; more through
    /// `memcpy`. Most appends are a few bytes (a key, an id, a literal),
    /// some twenty of them per record, and the call to `memcpy` costs more
    /// than such a copy (docs/PERFORMANCE.md).
    @inline(__always)
    package static func copy(_ source: UnsafeRawPointer, to destination: UnsafeMutableRawPointer, count: Int) {
        if count > 16 {
            destination.copyMemory(from: source, byteCount: count)
        } else if count >= 8 {
            let head = source.loadUnaligned(as: UInt64.self)
            let tail = source.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
            destination.storeBytes(of: head, as: UInt64.self)
            destination.storeBytes(of: tail, toByteOffset: count &- 8, as: UInt64.self)
        } else if count >= 4 {
            let head = source.loadUnaligned(as: UInt32.self)
            let tail = source.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
            destination.storeBytes(of: head, as: UInt32.self)
            destination.storeBytes(of: tail, toByteOffset: count &- 4, as: UInt32.self)
        } else if count > 0 {
            let first = source.load(as: UInt8.self)
            let middle = source.load(fromByteOffset: count &>> 1, as: UInt8.self)
            let last = source.load(fromByteOffset: count &- 1, as: UInt8.self)
            destination.storeBytes(of: first, as: UInt8.self)
            destination.storeBytes(of: middle, toByteOffset: count &>> 1, as: UInt8.self)
            destination.storeBytes(of: last, toByteOffset: count &- 1, as: UInt8.self)
        }
    }

    package mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        append(UnsafeRawBufferPointer(bytes))
    }

    package mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Appends text known at compile time.
    @inline(__always)
    package mutating func append(_ literal: StaticString) {
        append(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends `count` bytes that `write` puts in place through a pointer.
    @inline(__always)
    package mutating func append(count: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Void) {
        if count > capacity - self.count { grow(toHold: count) }
        write((base + self.count).assumingMemoryBound(to: UInt8.self))
        self.count += count
    }

    /// Appends at most `maxCount` bytes that `write` puts in place through a
    /// pointer to room for `maxCount`, returning how many it wrote: for
    /// text whose length is known only once written (digits stored a word
    /// at a time).
    @inline(__always)
    package mutating func append(upTo maxCount: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Int) {
        if maxCount > capacity - count { grow(toHold: maxCount) }
        let written = write((base + count).assumingMemoryBound(to: UInt8.self))
        assert(written >= 0 && written <= maxCount, "wrote outside the room it was given")
        count += written
    }

    /// Makes room for `extra` more bytes, at least doubling, on the heap.
    private mutating func grow(toHold extra: Int) {
        let newCapacity = max(count + extra, capacity * 2)
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 1)
        newBase.copyMemory(from: base, byteCount: count)
        if ownsMemory { base.deallocate() }
        base = newBase
        capacity = newCapacity
        ownsMemory = true
    }
}
