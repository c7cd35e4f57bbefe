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
        _chainDescription(upstream: _upstream)
    }

    /// This promise's summary and the chain from `upstream`, the promise it
    /// waits on (nil when none: then its parent, if it had one, is named by
    /// serial number). Also for the leak report, which reads `upstream`
    /// under the same lock as what it reports.
    func _chainDescription(upstream: (any _PromiseNode)?) -> String {
        var lines = [_summary]
        var node = upstream
        var seen: Set<ObjectIdentifier> = [ObjectIdentifier(self)]
        while let parent = node, seen.insert(ObjectIdentifier(parent)).inserted {
            lines.append("  ← " + parent._summary)
            node = parent._upstream
        }
        if upstream == nil, _parentSerial != 0 {
            lines.append("  ← #\(_parentSerial) (released)")
        }
        return lines.joined(separator: "\n")
    }
}
