/// The `id` param of a `resolve` or `reject`, left where it lies in the line
/// the dispatcher was lent, not made into a `String`: the registry looks
/// the promise up by these bytes (`Registry.entry(idBytes:)`), and keeps
/// using the id it stored when the promise was made.
///
/// An id longer than 15 bytes does not fit in a `String`'s own bits: made
/// into one to look a promise up, it is allocated and freed again
/// (docs/PERFORMANCE.md).
///
/// Only the request parser lends ids (`RequestLine`), and only the
/// dispatcher asks it to: the bytes are valid while the line is
/// handled, and a lent id must not be kept past that.
///
/// Lent only when the id is already known to be a valid one (printable
/// ASCII written without escapes, 16 to ``PromiseID/maxBytes`` bytes), so
/// that looking it up is all there is left to do; any other is read as
/// every string is.
package struct LentPromiseID: Hashable {
    package let bytes: UnsafeRawBufferPointer

    package init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The shortest id lent: a shorter one is a `String` with no allocation.
    package static let minimumCount = 16

    package static func == (lhs: LentPromiseID, rhs: LentPromiseID) -> Bool {
        lhs.bytes.elementsEqual(rhs.bytes)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(bytes: bytes)
    }
}
