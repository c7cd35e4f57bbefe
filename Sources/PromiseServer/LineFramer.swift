import Glibc

/// Splits a byte stream into lines: the daemon's framing (one JSON-RPC
/// message per line).
///
/// - A line ends at `"\n"`; one `"\r"` just before it is dropped, so
///   `"\r\n"` works too. The terminator is not part of the line. Empty lines
///   are delivered as empty arrays (the dispatcher decides what they mean).
/// - A line may arrive in any number of pieces, and one piece may hold any
///   number of lines.
/// - A line may be at most ``maxLineBytes`` long, counted without its
///   terminator (`"\n"` or `"\r\n"`). A longer line makes the stream
///   unframeable: ``feed(_:_:)`` throws ``LineTooLong`` as soon as the limit
///   is passed (without waiting for the newline) and on every later call.
/// - Bytes after the last `"\n"` wait for the next piece; ``finish()`` hands
///   them over when the stream ends.
///
/// ```swift
/// var framer = LineFramer(maxLineBytes: 1 << 20)
/// try framer.feed(Array("{\"id\":1}\r\n{\"i".utf8)) { line in handle(line) }  // one line
/// try framer.feed(Array("d\":2}\n".utf8)) { line in handle(line) }            // the second
/// ```
public struct LineFramer: Sendable {
    /// The stream had a line longer than the limit; it cannot be framed any further.
    public struct LineTooLong: Error, Sendable, Hashable, CustomStringConvertible {
        /// The limit that was passed, in bytes.
        public let limit: Int
        public init(limit: Int) { self.limit = limit }
        public var description: String { "line longer than \(limit) bytes" }
    }

    /// The longest line accepted, in bytes, without its terminator.
    public let maxLineBytes: Int
    /// True once a line was too long: every later ``feed(_:_:)`` throws.
    public private(set) var isUnframeable = false
    /// The start of a line whose "\n" has not arrived yet.
    private var partial: [UInt8] = []

    /// Partial lines keep their buffer for the next line, unless it grew past this.
    private static let retainedCapacity = 64 * 1024

    public init(maxLineBytes: Int) {
        precondition(maxLineBytes >= 0, "maxLineBytes must not be negative")
        self.maxLineBytes = maxLineBytes
    }

    /// Bytes received that do not end a line yet.
    public var bufferedByteCount: Int { partial.count }

    /// Feeds the next piece of the stream and calls `body` with each line it completes, in order.
    ///
    /// - Throws: ``LineTooLong`` when a line passes ``maxLineBytes`` (lines
    ///   completed before it in the same piece were delivered first), and on
    ///   every call after that.
    ///   `bytes` may be discarded as soon as this returns: lines are copies.
    public mutating func feed(
        _ bytes: UnsafeRawBufferPointer,
        _ body: ([UInt8]) -> Void
    ) throws(LineTooLong) {
        try feed(bytes, lending: { body(Array($0)) })
    }

    /// Like ``feed(_:_:)-(UnsafeRawBufferPointer,_)``, but each line's bytes
    /// are lent to `body` for the call only, not copied: from `bytes`
    /// itself, or from the framer's buffer for a line that came in pieces.
    public mutating func feed(
        _ bytes: UnsafeRawBufferPointer,
        lending body: (UnsafeRawBufferPointer) -> Void
    ) throws(LineTooLong) {
        guard !isUnframeable else { throw LineTooLong(limit: maxLineBytes) }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        let count = bytes.count
        var start = 0
        // memchr is the fastest newline scan on offer; this loop is the
        // daemon's hot path for every request.
        while start < count, let found = memchr(base + start, 0x0A, count - start) {
            let newline = base.distance(to: UnsafeRawPointer(found))
            if partial.isEmpty {
                var end = newline
                if end > start && bytes[end - 1] == 0x0D { end -= 1 }
                guard end - start <= maxLineBytes else { throw fail() }
                body(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
            } else {
                partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<newline]))
                if partial.last == 0x0D { partial.removeLast() }
                guard partial.count <= maxLineBytes else { throw fail() }
                partial.withUnsafeBytes(body)
                if partial.capacity > Self.retainedCapacity {
                    partial = []
                } else {
                    partial.removeAll(keepingCapacity: true)
                }
            }
            start = newline + 1
        }
        guard start < count else { return }
        partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<count]))
        // A line of exactly the limit may still be waiting for the "\n" of its "\r\n".
        if partial.count > maxLineBytes + 1 || (partial.count == maxLineBytes + 1 && partial.last != 0x0D) {
            throw fail()
        }
    }

    /// Feeds bytes from any collection (convenient for tests and clients).
    public mutating func feed(_ bytes: some Collection<UInt8>, _ body: ([UInt8]) -> Void) throws(LineTooLong) {
        let outcome: Result<Void, LineTooLong>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(LineTooLong) in try feed(UnsafeRawBufferPointer(buffer), body) }
        }
        if let outcome {
            try outcome.get()
        } else {
            let copy = Array(bytes)
            let outcome = copy.withUnsafeBytes { bytes in
                Result { () throws(LineTooLong) in try feed(bytes, body) }
            }
            try outcome.get()
        }
    }

    /// The lines a piece completes, as an array.
    public mutating func lines(in bytes: some Collection<UInt8>) throws(LineTooLong) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        try feed(bytes) { lines.append($0) }
        return lines
    }

    /// Ends the stream: returns the bytes after the last "\n" as a final
    /// line (one trailing "\r" dropped), or nil when there are none.
    /// The daemon accepts a last request without its newline this way.
    public mutating func finish() -> [UInt8]? {
        guard !isUnframeable, !partial.isEmpty else { return nil }
        var line = partial
        partial = []
        if line.last == 0x0D { line.removeLast() }
        // A lone "\r" waiting for its "\n" may have put one byte over the limit.
        return line.count <= maxLineBytes ? line : nil
    }

    private mutating func fail() -> LineTooLong {
        isUnframeable = true
        partial = []
        return LineTooLong(limit: maxLineBytes)
    }
}
