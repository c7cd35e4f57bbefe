extension Promise: CustomStringConvertible, CustomDebugStringConvertible {
    /// One line: type, serial number, name, generation and state.
    ///
    /// ```swift
    /// print(promise)   // Promise<Int> #12 "parse" generation 2: pending
    /// ```
    public var description: String { _summary }

    /// The promise and the chain of pending promises it waits on, up to the
    /// root (TheraLynx's chain description). A promise lets go of its parent
    /// when it settles, so a settled link names its parent by serial number.
    ///
    /// ```
    /// Promise<Int> #12 "parse" generation 2: pending
    ///   ← Promise<String> #11 "fetch" generation 1: pending
    ///   ← Promise<URL> #10 generation 0: pending
    /// ```
    public var debugDescription: String {
        var lines = [_summary]
        var node: any _PromiseNode = self
        var seen: Set<ObjectIdentifier> = [ObjectIdentifier(self)]
        while let parent = node._upstream, seen.insert(ObjectIdentifier(parent)).inserted {
            lines.append("  ← " + parent._summary)
            node = parent
        }
        if node === self, _parentSerial != 0 {
            lines.append("  ← #\(_parentSerial) (released)")
        }
        return lines.joined(separator: "\n")
    }
}
