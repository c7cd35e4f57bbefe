import PromiseJSON
import PromiseModel

/// Typed reading of a request's named params. Every accessor throws
/// -32602 (invalid params) naming the offending param in `data.param`, so a
/// client learns exactly what to fix.
///
/// ```swift
/// let params = RPCParams(["id": "build", "timeoutMs": 500])
/// let id = try params.promiseID("id")                       // "build"
/// let timeout = try params.milliseconds("timeoutMs")        // 500
/// ```
public struct RPCParams: Sendable, Hashable {
    /// The members as sent, in order; of a repeated key, the last counts.
    ///
    /// An array, not a dictionary: params hold a few members and a method
    /// asks for each it knows, so comparing the few keys costs less than
    /// hashing each key once to build a dictionary and again per lookup
    /// (docs/PERFORMANCE.md).
    ///
    /// Of a struct, not a tuple: tuples are destroyed one by one through
    /// the tuple's metadata when the array is freed (docs/PERFORMANCE.md).
    private var pairs: [Pair]
    /// Positions in `pairs` by key, for the rare params with many members,
    /// which a linear search would make quadratic in the line's length.
    private var index: [String: Int]?

    /// One member as sent.
    package struct Pair {
        var key: String
        var value: JSONValue
        /// True when the value is a string the parser read as printable
        /// ASCII without escapes (see
        /// ``JSONParser/parseString(printableASCII:)``): as a promise id it
        /// needs only its length checked, its bytes are not read again by
        /// ``PromiseID/problem(with:)``.
        var printableASCII = false
    }

    /// Params with more members than this are indexed.
    private static let linearSearchLimit = 8

    /// The members, as a dictionary.
    public var members: [String: JSONValue] {
        get { Dictionary(pairs.lazy.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last }) }
        set { self = RPCParams(newValue) }
    }

    public init(_ members: [String: JSONValue]) {
        self.init(pairs: members.map { Pair(key: $0.key, value: $0.value) })
    }

    /// Members as read from a request, in order (see `RequestLine`).
    init(pairs: [Pair]) {
        self.pairs = pairs
        guard pairs.count > Self.linearSearchLimit else {
            index = nil
            return
        }
        var index: [String: Int] = [:]
        index.reserveCapacity(pairs.count)
        for (position, pair) in pairs.enumerated() { index[pair.key] = position }
        self.index = index
    }

    /// Consumes these params and returns their storage, emptied but for its
    /// capacity, for the next request to be read into (see
    /// ``RequestLine/init(parsing:reusing:)``). Storage held elsewhere as
    /// well is not emptied in place: a new one is returned.
    package consuming func takeStorage() -> [Pair] {
        var storage: [Pair] = []
        swap(&storage, &pairs)
        storage.removeAllKeepingStorage()
        return storage
    }

    /// Adds `pair` after the members: of a repeated key, it counts.
    mutating func append(_ pair: Pair) {
        pairs.append(pair)
        if index != nil || pairs.count > Self.linearSearchLimit { self = RPCParams(pairs: pairs) }
    }

    /// How many members were sent, a repeated key counted each time.
    package var count: Int { pairs.count }

    /// The value of `key`.
    public subscript(key: String) -> JSONValue? {
        position(of: key).map { pairs[$0].value }
    }

    /// Where the value of `key` is in `pairs` (its last, when repeated).
    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        // By position, not `for pair in pairs.reversed()`: that copied each
        // pair, retaining and releasing its key and value, to compare a key.
        var position = pairs.count
        while position > 0 {
            position -= 1
            if pairs[position].key == key { return position }
        }
        return nil
    }

    /// The deepest nesting among the values, counting the params object as one level.
    package var depth: Int {
        // Read in place, and only arrays and objects further: copying each
        // value out to ask it is dear for params that are mostly strings
        // (docs/PERFORMANCE.md).
        var deepest = 0
        for position in pairs.indices {
            switch pairs[position].value {
            case .array, .object: deepest = max(deepest, pairs[position].value.depth)
            default: continue
            }
        }
        return 1 + deepest
    }

    public static func == (lhs: RPCParams, rhs: RPCParams) -> Bool {
        lhs.members == rhs.members
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(members)
    }

    /// The -32602 error for `key`.
    public static func invalid(_ key: String, _ message: String) -> RPCError {
        RPCError(.invalidParams, message, data: ["param": .string(key)])
    }

    /// A required promise id (see ``PromiseID``).
    public func promiseID(_ key: String) throws(RPCError) -> String {
        guard let position = position(of: key) else { throw Self.invalid(key, "missing \"\(key)\"") }
        return try checkedID(at: position, key)
    }

    /// An optional promise id; null reads as absent.
    public func optionalPromiseID(_ key: String) throws(RPCError) -> String? {
        guard let position = position(of: key) else { return nil }
        if case .null = pairs[position].value { return nil }
        return try checkedID(at: position, key)
    }

    /// The promise id at `position`, its bytes not read again when the
    /// parser found them printable ASCII.
    private func checkedID(at position: Int, _ key: String) throws(RPCError) -> String {
        // Matched in place: through `checkedID(_:_:)`, the value would be
        // copied out and destroyed (docs/PERFORMANCE.md).
        if pairs[position].printableASCII, case .string(let text) = pairs[position].value,
            PromiseID.problem(with: text, knownPrintableASCII: true) == nil
        {
            return text
        }
        return try Self.checkedID(pairs[position].value, key)
    }

    /// A required array of promise ids.
    public func promiseIDs(_ key: String) throws(RPCError) -> [String] {
        guard let value = self[key] else { throw Self.invalid(key, "missing \"\(key)\"") }
        guard case .array(let elements) = value else {
            throw Self.invalid(key, "\"\(key)\" must be an array of promise ids")
        }
        var ids: [String] = []
        ids.reserveCapacity(elements.count)
        for element in elements {
            ids.append(try Self.checkedID(element, key))
        }
        return ids
    }

    /// An optional string; null reads as absent.
    public func string(_ key: String) throws(RPCError) -> String? {
        switch self[key] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw Self.invalid(key, "\"\(key)\" must be a string")
        }
    }

    /// An optional boolean; null reads as absent.
    public func bool(_ key: String) throws(RPCError) -> Bool? {
        switch self[key] {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        default: throw Self.invalid(key, "\"\(key)\" must be true or false")
        }
    }

    /// An optional whole number in `range`; null reads as absent. A double
    /// with no fractional part (`500.0`) is accepted.
    public func int(_ key: String, in range: ClosedRange<Int>) throws(RPCError) -> Int? {
        guard let value = self[key], !value.isNull else { return nil }
        guard let number = value.intValue, range.contains(number) else {
            throw Self.invalid(key, "\"\(key)\" must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// An optional duration in milliseconds (a whole number, 0 or more).
    public func milliseconds(_ key: String) throws(RPCError) -> UInt64? {
        try int(key, in: 0...Int.max).map { UInt64($0) }
    }

    /// An optional number in `range`; null reads as absent.
    public func double(_ key: String, in range: ClosedRange<Double>) throws(RPCError) -> Double? {
        guard let value = self[key], !value.isNull else { return nil }
        guard let number = value.doubleValue, range.contains(number) else {
            throw Self.invalid(key, "\"\(key)\" must be a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// An optional string that must be one of `choices`; null reads as absent.
    public func choice(_ key: String, _ choices: [String]) throws(RPCError) -> String? {
        guard let text = try string(key) else { return nil }
        guard choices.contains(text) else {
            throw Self.invalid(key, "\"\(key)\" must be one of " + choices.map { "\"\($0)\"" }.joined(separator: ", "))
        }
        return text
    }

    /// An optional string naming one of `T`'s cases, in their declared order
    /// in the error that a name outside them gets.
    ///
    /// ```swift
    /// let on = try params.choice("on", of: ThenTrigger.self) ?? .fulfilled
    /// ```
    public func choice<T: RawRepresentable & CaseIterable>(_ key: String, of type: T.Type) throws(RPCError) -> T?
    where T.RawValue == String {
        guard let text = try choice(key, T.allCases.map(\.rawValue)) else { return nil }
        return T(rawValue: text)
    }

    /// An optional array of strings; null reads as absent.
    public func strings(_ key: String) throws(RPCError) -> [String]? {
        guard let value = self[key], !value.isNull else { return nil }
        guard case .array(let elements) = value else {
            throw Self.invalid(key, "\"\(key)\" must be an array of strings")
        }
        var texts: [String] = []
        for element in elements {
            guard case .string(let text) = element else {
                throw Self.invalid(key, "\"\(key)\" must be an array of strings")
            }
            texts.append(text)
        }
        return texts
    }

    /// An optional object whose members are all strings; null reads as absent.
    public func stringMap(_ key: String) throws(RPCError) -> [String: String]? {
        guard let value = self[key], !value.isNull else { return nil }
        guard case .object(let object) = value else {
            throw Self.invalid(key, "\"\(key)\" must be an object of strings")
        }
        var map: [String: String] = [:]
        for (name, member) in object {
            guard case .string(let text) = member else {
                throw Self.invalid(key, "\"\(key)\" must be an object of strings (\"\(name)\" is not a string)")
            }
            map[name] = text
        }
        return map
    }

    private static func checkedID(_ value: JSONValue, _ key: String) throws(RPCError) -> String {
        guard case .string(let text) = value else {
            throw invalid(key, "\"\(key)\" must be a promise id (a string)")
        }
        if let problem = PromiseID.problem(with: text) {
            throw RPCError(.invalidParams, "invalid promise id in \"\(key)\": \(problem)",
                           data: ["param": .string(key)])
        }
        return text
    }
}
