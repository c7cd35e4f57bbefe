/// One line a client sent, read as the dispatcher needs it: a message or a
/// batch of messages, each with its envelope members picked out.
///
/// The envelope is read straight from the bytes: the members `jsonrpc`, `id`,
/// `method` and `params` land in ``JSONRPCEnvelope``'s fields as they are
/// parsed, so no dictionary is built (and no key hashed) for the top level
/// of every request. Hashing those keys, to build the object and then to
/// look its members up, was about a tenth of the daemon's instructions per
/// request. The members of an object `params` go into ``RPCParams`` as they
/// are read, again without a dictionary; every other value is parsed as usual.
///
/// ```swift
/// let line = try RequestLine(parsing: Array(#"{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":"a"}}"#.utf8))
/// // .single(JSONRPCEnvelope(id: 1, jsonrpc: "2.0", method: "get", params: ["id": "a"]))
/// ```
enum RequestLine: Hashable {
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
    /// (``RPCParams/takeStorage()``), taken (left nil). Allocating and
    /// freeing that array for every request cost about 680 instructions
    /// of a create+resolve pair (`scripts/count-instructions.sh daemon`).
    init(parsing line: UnsafeRawBufferPointer, reusing spare: inout [RPCParams.Pair]?) throws(JSONParseError) {
        self = try line.withMemoryRebound(to: UInt8.self) { bytes throws(JSONParseError) in
            try JSONParser.parse(bytes) { parser throws(JSONParseError) in
                guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "[") else {
                    return .single(try parser.parseEnvelope(reusing: &spare))
                }
                var messages: [JSONRPCEnvelope?] = []
                try parser.parseElements { parser throws(JSONParseError) in
                    messages.append(try parser.parseEnvelope(reusing: &spare))
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
struct JSONRPCEnvelope: Hashable {
    var id: JSONValue?
    var jsonrpc: JSONValue?
    var method: Method?
    var params: Params?

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

    /// No member yet, for the parser to fill: the memberwise initialiser
    /// below, given no argument, made an empty envelope, copied it and
    /// destroyed the original, about 100 instructions a line.
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
    /// ``JSONParser/parseMembers(key:value:)``, whose value closure was not
    /// inlined and captured the envelope in a box; with the method told from
    /// its word and the params read as below, reading a create+resolve pair's
    /// lines went from about 4,300 instructions to 3,900 (callgrind).
    fileprivate mutating func parseEnvelope(
        reusing spare: inout [RPCParams.Pair]?
    ) throws(JSONParseError) -> JSONRPCEnvelope? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else {
            _ = try parseValue()
            return nil
        }
        var envelope = JSONRPCEnvelope()
        try parseEnvelopeMembers(into: &envelope, reusing: &spare)
        // Moved out: returned as is, it was copied, then destroyed here
        // (about 140 instructions a request).
        return consume envelope
    }

    /// Reads the members of the object the parser is on into `envelope`.
    /// A function of its own so that its caller can move the envelope out:
    /// the compiler cannot `consume` a variable set in this loop.
    @inline(__always)
    private mutating func parseEnvelopeMembers(
        into envelope: inout JSONRPCEnvelope, reusing spare: inout [RPCParams.Pair]?
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
                if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                    envelope.params = .named(try parseNamedParams(reusing: &spare))
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

    /// Reads the params object (the parser is on its "{") member by member,
    /// into ``RPCParams`` as they come, marking the strings that need no
    /// second look as promise ids.
    private mutating func parseNamedParams(reusing spare: inout [RPCParams.Pair]?) throws(JSONParseError) -> RPCParams {
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
            } else {
                if let common = parseCommonString() { key = common } else { key = try parseString() }
                try endKey()
            }
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
    /// once: reading the key as a string, then its colon, cost about 50
    /// instructions more a key (callgrind).
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
    /// of that text; nil for any other, read as strings are. Read as a
    /// common string, then its colon, each cost about 60 instructions more
    /// (callgrind).
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
        if let raw = parseASCIIStringBytes() {
            guard raw.count <= 8 else { return nil }
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
        /// where comparing the bytes and making no `String` still cost
        /// some 65 instructions a key.
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
