import PromiseJSON
import PromiseModel

/// One line a client sent, read as the dispatcher needs it: a message or a
/// batch of messages, each with its envelope members picked out.
///
/// The envelope is read straight from the bytes: the members `jsonrpc`, `id`,
/// `method` and `params` land in ``JSONRPCEnvelope``'s fields as they are
/// parsed, so no dictionary is built (and no key hashed) for the top level
/// of every request: hashing those keys, to build the object and then to
/// look its members up, is a large part of the daemon's work per request
/// (docs/PERFORMANCE.md). The members of an object `params` go into
/// ``RPCParams`` as they are read, again without a dictionary; every other
/// value is parsed as usual.
///
/// ```swift
/// let line = try RequestLine(parsing: Array(#"{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":"a"}}"#.utf8))
/// // .single(JSONRPCEnvelope(id: 1, jsonrpc: "2.0", method: "get", params: ["id": "a"]))
/// ```
package enum RequestLine: Hashable {
    /// One message; nil when it is not a JSON object.
    case single(JSONRPCEnvelope?)
    /// A JSON array: its elements, nil for those that are not objects.
    case batch([JSONRPCEnvelope?])

    /// Reads a line that must be exactly one JSON value.
    ///
    /// - Throws: ``JSONParseError`` when the line is not JSON, exactly as
    ///   ``JSONValue/init(parsing:)-(some Collection<UInt8>)`` would.
    init(parsing line: [UInt8]) throws(JSONParseError) {
        let parsed = line.withUnsafeBytes { bytes in
            Result { () throws(JSONParseError) in try RequestLine(parsing: bytes) }
        }
        self = try parsed.get()
    }

    /// Reads a line lent as bytes (see ``Dispatcher/handle(line:from:)-(UnsafeRawBufferPointer,_)``).
    init(parsing line: UnsafeRawBufferPointer) throws(JSONParseError) {
        var none: [RPCParams.Pair]?
        try self.init(parsing: line, reusing: &none)
    }

    /// Reads a line lent as bytes, the first params object into `spare`,
    /// when given: the emptied storage of an earlier request's params
    /// (``RPCParams/takeStorage()``), taken (left nil), so that no request
    /// allocates and frees that array (docs/PERFORMANCE.md).
    ///
    /// With `lendingIDs`, the id of a `resolve` or `reject` whose "method"
    /// comes before its "params" is left in `line` (``LentPromiseID``)
    /// when it is a valid id of 16 bytes or more: the line read must then
    /// not outlive `line`.
    package init(
        parsing line: UnsafeRawBufferPointer, reusing spare: inout [RPCParams.Pair]?, lendingIDs: Bool = false
    ) throws(JSONParseError) {
        self = try line.withMemoryRebound(to: UInt8.self) { bytes throws(JSONParseError) in
            try JSONParser.parse(bytes) { parser throws(JSONParseError) in
                guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "[") else {
                    return .single(try parser.parseEnvelope(reusing: &spare, lendingIDs: lendingIDs))
                }
                var messages: [JSONRPCEnvelope?] = []
                try parser.parseElements { parser throws(JSONParseError) in
                    messages.append(try parser.parseEnvelope(reusing: &spare, lendingIDs: lendingIDs))
                }
                return .batch(messages)
            }
        }
    }
}

/// The members of a message that make up its JSON-RPC envelope, as they were
/// sent (not yet checked: see ``JSONRPCRequest/init(_:)-(JSONRPCEnvelope?)``).
/// Any other member is parsed and dropped. A repeated member keeps its last
/// value, as in any object the daemon reads.
package struct JSONRPCEnvelope: Hashable {
    var id: JSONValue?
    var jsonrpc: JSONValue?
    var method: Method?
    var params: Params?
    /// The params' "id", when it was lent rather than put in `params`
    /// (see ``LentPromiseID``).
    var lentID: LentPromiseID?

    /// "method" as sent.
    enum Method: Hashable {
        /// A string naming one of the daemon's methods: the parser tells the
        /// common ones from their bytes (see ``RPCMethod``), with no `String`
        /// made of them, and the dispatcher picks the method by it.
        case known(RPCMethod)
        /// Anything else (refused, but for a string: an unknown method).
        case other(JSONValue)

        init(_ value: JSONValue) {
            if case .string(let name) = value, let known = RPCMethod(rawValue: name) {
                self = .known(known)
            } else {
                self = .other(value)
            }
        }
    }

    /// "params" as sent.
    enum Params: Hashable {
        /// An object: its members, read straight into ``RPCParams`` with no
        /// dictionary built.
        case named(RPCParams)
        /// Anything else (refused, but for null).
        case other(JSONValue)

        init(_ value: JSONValue) {
            if case .object(let members) = value {
                self = .named(RPCParams(members))
            } else {
                self = .other(value)
            }
        }
    }

    /// The envelope of a message already parsed; nil when it is not an object.
    init?(_ message: JSONValue) {
        guard case .object(let members) = message else { return nil }
        self.init(id: members["id"], jsonrpc: members["jsonrpc"], method: members["method"], params: members["params"])
    }

    /// Puts a lent id back into the params, as any other member: for a
    /// "method" read again after them, which may not look the id up as bytes.
    package mutating func putBackLentID() {
        guard let lent = lentID.take() else { return }
        guard case .named(var named)? = params.take() else {
            assertionFailure("an id is lent only from named params")
            return
        }
        named.append(RPCParams.Pair(key: "id", value: .string(String(decoding: lent.bytes, as: UTF8.self)),
                                    printableASCII: true))
        params = .named(named)
    }

    /// No member yet, for the parser to fill: the memberwise initialiser
    /// below, given no argument, makes an empty envelope, copies it and
    /// destroys the original (docs/PERFORMANCE.md).
    init() {}

    init(id: JSONValue? = nil, jsonrpc: JSONValue? = nil, method: JSONValue? = nil, params: JSONValue? = nil) {
        self.id = id
        self.jsonrpc = jsonrpc
        self.method = method.map(Method.init)
        self.params = params.map(Params.init)
    }
}

extension JSONParser {
    /// Reads one value: an object's envelope members, or nil (having checked
    /// the value) when it is not an object.
    ///
    /// The members are walked in a loop here, not by
    /// ``JSONParser/parseMembers(key:value:)``, whose value closure is not
    /// inlined and captures the envelope in a box (docs/PERFORMANCE.md).
    fileprivate mutating func parseEnvelope(
        reusing spare: inout [RPCParams.Pair]?, lendingIDs: Bool
    ) throws(JSONParseError) -> JSONRPCEnvelope? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else {
            _ = try parseValue()
            return nil
        }
        var envelope = JSONRPCEnvelope()
        try parseEnvelopeMembers(into: &envelope, reusing: &spare, lendingIDs: lendingIDs)
        // Moved out: returned as is, it would be copied, then destroyed
        // here (docs/PERFORMANCE.md).
        return consume envelope
    }

    /// Reads the members of the object the parser is on into `envelope`.
    /// A function of its own so that its caller can move the envelope out:
    /// the compiler cannot `consume` a variable set in this loop.
    @inline(__always)
    private mutating func parseEnvelopeMembers(
        into envelope: inout JSONRPCEnvelope, reusing spare: inout [RPCParams.Pair]?, lendingIDs: Bool
    ) throws(JSONParseError) {
        var more = try beginObject()
        while more {
            let key: JSONRPCEnvelope.Member?
            if let compact = compactEnvelopeKey() {
                key = compact.member
                advance(by: compact.length)
                skipWhitespace()
            } else {
                key = try parseEnvelopeKey()
                try endKey()
            }
            switch key {
            case .params?:
                // Of the last "params" only, as every member: an id lent
                // from an earlier one is dropped with it.
                envelope.lentID = nil
                if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                    let lending = lendingIDs && envelope.method.map(Self.looksUpOnlyItsID) == true
                    envelope.params = .named(try parseNamedParams(reusing: &spare, lending: lending, &envelope.lentID))
                } else {
                    envelope.params = .other(try parseValue())
                }
            case .method?:
                // A common method is told from its word, with no `String`
                // made of it or compared later (see `RPCMethod`).
                if let short = shortStringValue(), let known = RPCMethod(word: short.word) {
                    advance(by: short.count + 2)
                    envelope.method = .known(known)
                } else {
                    envelope.method = JSONRPCEnvelope.Method(try parseValue())
                }
                envelope.putBackLentID()
            case .jsonrpc?:
                if index &+ 8 <= bytes.count, ByteLanes.load(bytes, at: index) & 0xFF_FFFF_FFFF == CompactText.version {
                    advance(by: 5)
                    envelope.jsonrpc = .string("2.0")
                } else {
                    envelope.jsonrpc = try parseValue()
                }
            case .id?:
                envelope.id = try parseValue()
            case nil:
                _ = try parseValue()
            }
            more = try endMember()
        }
    }

    /// Whether a method's params are read with their id lent (see
    /// ``LentPromiseID``): `resolve` and `reject`, which only look the
    /// promise up by it, and are most of what a busy daemon is sent.
    private static func looksUpOnlyItsID(_ method: JSONRPCEnvelope.Method) -> Bool {
        switch method {
        case .known(.resolve), .known(.reject): true
        default: false
        }
    }

    /// Reads the params object (the parser is on its "{") member by member,
    /// into ``RPCParams`` as they come, marking the strings that need no
    /// second look as promise ids. When `lending`, an "id" written as most
    /// clients write it (`"id":"…"`, no escapes) and valid as an id of 16
    /// bytes or more is left in the line, in `lentID`, not in the params.
    private mutating func parseNamedParams(
        reusing spare: inout [RPCParams.Pair]?, lending: Bool, _ lentID: inout LentPromiseID?
    ) throws(JSONParseError) -> RPCParams {
        var pairs = spare.take() ?? []
        assert(pairs.isEmpty, "reused params storage is emptied first")
        // Room for most requests' params (one to three members) at once.
        pairs.reserveCapacity(4)
        var more = try beginObject()
        while more {
            let key: String
            if let compact = compactParamKey() {
                key = compact.key
                advance(by: compact.length)
                skipWhitespace()
                if lending, compact.length == 5 /* "id": */, let lent = lendableID() {
                    // The last "id" counts: one read before is dropped.
                    if lentID == nil && !pairs.isEmpty { pairs.removeAll { $0.key == "id" } }
                    lentID = lent
                    more = try endMember()
                    continue
                }
            } else {
                if let common = parseCommonString() { key = common } else { key = try parseString() }
                try endKey()
            }
            // An id read as a pair after one was lent: the pair counts.
            if lentID != nil, key == "id" { lentID = nil }
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                var printableASCII = false
                let text = try parseString(printableASCII: &printableASCII)
                pairs.append(RPCParams.Pair(key: key, value: .string(text), printableASCII: printableASCII))
            } else {
                pairs.append(RPCParams.Pair(key: key, value: try parseValue()))
            }
            more = try endMember()
        }
        return RPCParams(pairs: pairs)
    }

    /// Reads the string the parser is on, and returns its bytes, when it is a
    /// valid id that ``LentPromiseID`` lends: printable ASCII without
    /// escapes, of 16 to ``PromiseID/maxBytes`` bytes. Returns nil, having
    /// read nothing, for any other value.
    private mutating func lendableID() -> LentPromiseID? {
        guard let end = printableASCIIStringEnd(maxCount: PromiseID.maxBytes),
              end - index - 1 >= LentPromiseID.minimumCount
        else { return nil }
        let id = LentPromiseID(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[(index + 1)..<end])))
        advance(by: end + 1 - index)
        return id
    }

    /// ``JSONParser/shortString()`` of the value the parser is on, if it is a string.
    private func shortStringValue() -> (word: UInt64, count: Int)? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        return shortString()
    }

    /// The envelope member whose key the parser is on, when it is written as
    /// most clients write it, its colon right after its closing quote
    /// (`"id":`, `"jsonrpc":`, `"method":`, `"params":`), and the length of
    /// that text; nil for any other key or way of writing one, which
    /// ``parseEnvelopeKey()`` then reads. Compared as loaded, 8 bytes at
    /// once, rather than read as a string and then its colon
    /// (docs/PERFORMANCE.md).
    private func compactEnvelopeKey() -> (member: JSONRPCEnvelope.Member, length: Int)? {
        guard index &+ 10 <= bytes.count else { return nil }
        let word = ByteLanes.load(bytes, at: index)
        if word & 0xFF_FFFF_FFFF == CompactText.idKey { return (.id, 5) }
        let colonAt8 = bytes[index &+ 8] == UInt8(ascii: ":")
        switch word {
        case CompactText.methodKey where colonAt8: return (.method, 9)
        case CompactText.paramsKey where colonAt8: return (.params, 9)
        case CompactText.jsonrpcKey where bytes[index &+ 8] == UInt8(ascii: "\"") && bytes[index &+ 9] == UInt8(ascii: ":"):
            return (.jsonrpc, 10)
        default: return nil
        }
    }

    /// The param key the parser is on, with its colon right after it, when
    /// it is `"id":` or `"value":` (create's and resolve's), and the length
    /// of that text; nil for any other, read as strings are. Compared as
    /// loaded, as `compactEnvelopeKey()` does (docs/PERFORMANCE.md).
    private func compactParamKey() -> (key: String, length: Int)? {
        guard index &+ 8 <= bytes.count else { return nil }
        let word = ByteLanes.load(bytes, at: index)
        if word & 0xFF_FFFF_FFFF == CompactText.idKey { return ("id", 5) }
        if word == CompactText.valueKey { return ("value", 8) }
        return nil
    }

    /// Reads a key: one of the envelope's, or nil for any other.
    private mutating func parseEnvelopeKey() throws(JSONParseError) -> JSONRPCEnvelope.Member? {
        if let word = parseShortString() { return JSONRPCEnvelope.Member(word: word) }
        if let raw = parseASCIIStringBytes(maxCount: 8) {
            // The parser is past the key's closing quote.
            return JSONRPCEnvelope.Member(word: word(from: index - 1 - raw.count, count: raw.count))
        }
        // Escaped, or not ASCII: read (and checked) as any string is.
        return JSONRPCEnvelope.Member(rawValue: try parseString())
    }
}

extension JSONRPCEnvelope {
    /// The members an envelope keeps.
    enum Member: String {
        case id, jsonrpc, method, params

        /// The member whose name, of at most 8 bytes, has the word `word`
        /// (``JSONParser/word(from:count:)``): one comparison per candidate,
        /// cheaper than comparing the bytes (docs/PERFORMANCE.md).
        init?(word: UInt64) {
            switch word {
            case ShortWord.id: self = .id
            case ShortWord.jsonrpc: self = .jsonrpc
            case ShortWord.method: self = .method
            case ShortWord.params: self = .params
            default: return nil
            }
        }
    }
}

/// Texts of a request as most clients write them, as
/// ``ByteLanes/load(_:at:)`` loads them (the first byte in the lowest lane),
/// written out; RequestLineCompactTests checks each against its text.
enum CompactText {
    /// `"id":`, in the low 5 bytes.
    static let idKey: UInt64 = 0x3A_22_64_69_22
    /// `"method"`, before its colon.
    static let methodKey: UInt64 = 0x22_64_6F_68_74_65_6D_22
    /// `"params"`, before its colon.
    static let paramsKey: UInt64 = 0x22_73_6D_61_72_61_70_22
    /// `"jsonrpc`, before its closing quote and colon.
    static let jsonrpcKey: UInt64 = 0x63_70_72_6E_6F_73_6A_22
    /// `"value":`, a param's key with its colon.
    static let valueKey: UInt64 = 0x3A_22_65_75_6C_61_76_22
    /// `"2.0"`, in the low 5 bytes.
    static let version: UInt64 = 0x22_30_2E_32_22
}
