extension Array {
    /// Removes every element and keeps the storage, for arrays emptied and
    /// filled again for every request (the relay's news, a request's params).
    ///
    /// Popped one by one, not `removeAll(keepingCapacity: true)`, which goes
    /// through the generic `replaceSubrange`, dear for the one to three
    /// elements these hold (docs/PERFORMANCE.md). Storage that is
    /// shared is copied by the first pop, as any change would copy it.
    ///
    /// ```swift
    /// var params = [1, 2]
    /// params.removeAllKeepingStorage()   // [], capacity kept
    /// ```
    ///
    /// Inlinable: other modules call it for their own element types, which
    /// an unspecialized call looks up at run time on every call.
    @inlinable @inline(__always)
    package mutating func removeAllKeepingStorage() {
        while popLast() != nil {}
    }
}
