import PromiseJSON

/// The answers a ``BlockingPromiseClient`` read before anyone asked for them, by
/// request id, first come first taken for each id (null-id error answers to
/// unparseable requests can repeat).
///
/// Up to `listLimit` answers wait in a list searched from the front, where
/// answers to requests sent one after another are found at once; past it
/// they move to a dictionary. Why not always the dictionary: the first one a
/// process makes looks up `JSONValue: Hashable` in the Swift runtime's
/// conformance tables, a search of all of them that a short `promisectl`
/// call pays at start-up (docs/PERFORMANCE.md).
///
/// ```swift
/// var unclaimed = UnclaimedResponses()
/// unclaimed.append(["id": 2, "result": true], for: 2)
/// unclaimed.takeFirst(for: 2)  // the answer; nil the second time
/// ```
struct UnclaimedResponses {
    /// Answers in the order they came; never used while `byID` holds any
    /// (so the order of each id's answers is kept across both).
    private var list: [(id: JSONValue, response: JSONValue)] = []
    private var byID: [JSONValue: [JSONValue]] = [:]
    private static let listLimit = 16

    var isEmpty: Bool { list.isEmpty && byID.isEmpty }

    mutating func append(_ response: JSONValue, for id: JSONValue) {
        assert(list.isEmpty || byID.isEmpty, "answers are in the list or in the dictionary, never both")
        if byID.isEmpty && list.count < Self.listLimit {
            list.append((id, response))
            return
        }
        for entry in list { byID[entry.id, default: []].append(entry.response) }
        list.removeAll()
        byID[id, default: []].append(response)
    }

    /// The first answer that came for `id`, taken out.
    mutating func takeFirst(for id: JSONValue) -> JSONValue? { take(for: id, newest: false) }

    /// The last answer that came for `id`, taken out.
    mutating func takeLast(for id: JSONValue) -> JSONValue? { take(for: id, newest: true) }

    private mutating func take(for id: JSONValue, newest: Bool) -> JSONValue? {
        let index = newest ? list.lastIndex { $0.id == id } : list.firstIndex { $0.id == id }
        if let index { return list.remove(at: index).response }
        guard !byID.isEmpty, var waiting = byID[id], !waiting.isEmpty else { return nil }
        let taken = newest ? waiting.removeLast() : waiting.removeFirst()
        byID[id] = waiting.isEmpty ? nil : waiting
        return taken
    }
}
