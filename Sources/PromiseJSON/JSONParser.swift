/// A strict RFC 8259 parser from UTF-8 bytes to ``JSONValue``.
///
/// Written by hand rather than using Foundation's `JSONDecoder`, for two
/// reasons: decoding through `Codable` would be most of the daemon's CPU
/// time per request (docs/PERFORMANCE.md), and Foundation accepts text that
/// is not JSON (a trailing comma in `[1,]`), which a protocol server must
/// refuse.
///
/// Limits: nesting deeper than ``maximumDepth`` is refused rather than
/// recursed into, so hostile input cannot exhaust the stack; strings must be
/// valid UTF-8 without raw control characters, and `\u` escapes must pair
/// surrogates. A number that is a whole value within ±2^53 (such as `7`,
/// `1e3` or `2.0`) becomes `.int`, a whole literal up to `Int.max` stays
/// exact, one that a `Double` would change (past 64 bits, more than 15
/// significant digits, past `Double`'s range either way, or among its
/// subnormal numbers, which keep fewer digits) is kept as written
/// (`.number`), and every other number is a `.double`.
package struct JSONParser {
    static let maximumDepth = 512

    package let bytes: UnsafeBufferPointer<UInt8>
    package private(set) var index = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        try parse(bytes) { parser throws(JSONParseError) in try parser.parseValue() }
    }

    /// Reads `bytes`, which must hold exactly one JSON value with nothing but
    /// whitespace around it, with `read`, which starts on the value's first
    /// byte: `parseValue()`, or a reader of its own (see `RequestLine`).
    package static func parse<Parsed>(
        _ bytes: some Collection<UInt8>, _ read: (inout JSONParser) throws(JSONParseError) -> Parsed
    ) throws(JSONParseError) -> Parsed {
        func parse(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<Parsed, JSONParseError> {
            Result { () throws(JSONParseError) -> Parsed in try JSONParser.parse(buffer, read) }
        }
        if let contiguous = bytes.withContiguousStorageIfAvailable(parse) { return try contiguous.get() }
        return try Array(bytes).withUnsafeBufferPointer(parse).get()
    }

    /// The same, for bytes already in memory: the daemon's path for every
    /// line, spared the generic one's closure and `Result`.
    static func parse<Parsed>(
        _ buffer: UnsafeBufferPointer<UInt8>, _ read: (inout JSONParser) throws(JSONParseError) -> Parsed
    ) throws(JSONParseError) -> Parsed {
        var parser = JSONParser(buffer)
        parser.skipWhitespace()
        let parsed = try read(&parser)
        parser.skipWhitespace()
        guard parser.index == buffer.count else { throw parser.error("unexpected text after the value") }
        return parsed
    }

    // MARK: Values

    package mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        // Room for a small object's members (values and reasons mostly hold
        // one to three) from the start: an empty dictionary regrows,
        // rehashing every key, at the 2nd and 3rd member, and gathering the
        // members in an array first costs an allocation of its own. Not more
        // room: parsed values are kept in records, and four buckets cost a
        // small object little. (A request's params do not come here: see
        // `RequestLine`.)
        var members: [String: JSONValue] = Dictionary(minimumCapacity: 3)
        try parseMembers { parser throws(JSONParseError) in
            try parser.parseString()
        } value: { parser, key throws(JSONParseError) in
            // A repeated key keeps its last value.
            members[key] = try parser.parseValue()
        }
        return .object(members)
    }

    /// Walks the object that starts here, member by member: `key` reads a
    /// key (the parser is on its opening quote), then `value` reads its
    /// value (the parser is on the value's first byte).
    @inline(__always)
    mutating func parseMembers<Key>(
        key parseKey: (inout JSONParser) throws(JSONParseError) -> Key,
        value parseMemberValue: (inout JSONParser, Key) throws(JSONParseError) -> Void
    ) throws(JSONParseError) {
        var more = try beginObject()
        while more {
            let key = try parseKey(&self)
            try endKey()
            try parseMemberValue(&self, key)
            more = try endMember()
        }
    }

    /// Enters the object the parser is on (at its "{"). Returns true when a
    /// member follows, the parser on its key's opening quote; false for an
    /// empty object, read whole.
    ///
    /// With ``endKey()`` and ``endMember()``, the steps of
    /// ``parseMembers(key:value:)`` for a reader that walks an object in a
    /// loop of its own: `RequestLine` does, where closures passed to it are
    /// not inlined and cost a call, and the captured envelope a box.
    @inline(__always)
    package mutating func beginObject() throws(JSONParseError) -> Bool {
        try enter()
        index += 1
        skipWhitespace()
        if consume(UInt8(ascii: "}")) {
            depth -= 1
            return false
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
        return true
    }

    /// Reads what follows a key up to its value's first byte.
    @inline(__always)
    package mutating func endKey() throws(JSONParseError) {
        skipWhitespace()
        guard consume(UInt8(ascii: ":")) else { throw error("expected ':'") }
        skipWhitespace()
    }

    /// Reads what follows a member's value. Returns true when another member
    /// follows, the parser on its key's opening quote; false at the end of
    /// the object, read.
    @inline(__always)
    package mutating func endMember() throws(JSONParseError) -> Bool {
        skipWhitespace()
        if consume(UInt8(ascii: ",")) {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            return true
        }
        guard consume(UInt8(ascii: "}")) else { throw error("expected ',' or '}'") }
        depth -= 1
        return false
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        var elements: [JSONValue] = []
        try parseElements { parser throws(JSONParseError) in
            elements.append(try parser.parseValue())
        }
        return .array(elements)
    }

    /// Walks the array that starts here: `element` reads each element (the
    /// parser is on its first byte).
    @inline(__always)
    package mutating func parseElements(
        _ parseElement: (inout JSONParser) throws(JSONParseError) -> Void
    ) throws(JSONParseError) {
        try enter()
        index += 1
        skipWhitespace()
        if consume(UInt8(ascii: "]")) {
            depth -= 1
            return
        }
        while true {
            skipWhitespace()
            try parseElement(&self)
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            guard consume(UInt8(ascii: "]")) else { throw error("expected ',' or ']'") }
            depth -= 1
            return
        }
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= JSONParser.maximumDepth else {
            throw error("nesting deeper than \(JSONParser.maximumDepth) levels")
        }
    }

    // MARK: Strings

    package mutating func parseString() throws(JSONParseError) -> String {
        var printableASCII = false
        return try parseString(printableASCII: &printableASCII)
    }

    /// Reads a string, setting `printableASCII` to whether it was written
    /// as printable ASCII (0x20 to 0x7E) without escapes: then its bytes
    /// are known to make a valid promise id of their length, and
    /// `RPCParams` skips ``PromiseID/problem(with:)``, which would read
    /// them again (docs/PERFORMANCE.md). False says nothing:
    /// an escaped string is not looked at.
    @inline(__always)
    package mutating func parseString(printableASCII: inout Bool) throws(JSONParseError) -> String {
        index += 1  // the opening quote
        let start = index
        // Eight bytes at a time up to the first quote, backslash or control
        // character (see ``ByteLanes``), gathering their high bits to tell
        // ASCII, and the marks of DEL and above to tell printable ASCII; the
        // loop below reads that byte.
        var highBits: UInt64 = 0
        var deleteMarks: UInt64 = 0
        while index &+ 8 <= bytes.count {
            let word = ByteLanes.load(bytes, at: index)
            let special = ByteLanes.special(word)
            if special != 0 {
                let lane = ByteLanes.firstMarked(special)
                let before = (1 &<< UInt64(lane &* 8)) &- 1
                highBits |= word & before
                deleteMarks |= ByteLanes.atLeastDelete(word) & before
                index &+= lane
                break
            }
            highBits |= word
            deleteMarks |= ByteLanes.atLeastDelete(word)
            index &+= 8
        }
        var ascii = highBits & ByteLanes.highBits == 0
        var printable = deleteMarks == 0
        // Fast path: no escapes, so the bytes are the string.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let utf8 = UnsafeBufferPointer(rebasing: bytes[start..<index])
                // ASCII is valid UTF-8: skip the (unspecialised, slower) validating initialiser.
                let text = ascii ? Self.asciiString(utf8) : try validated(utf8)
                index += 1
                printableASCII = printable
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error("raw control character in a string") }
            if byte >= 0x7F {
                printable = false
                if byte >= 0x80 { ascii = false }
            }
            index += 1
        }
        printableASCII = false
        var unescaped = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try unescaped.withUnsafeBufferPointer { buffer throws(JSONParseError) in try validated(buffer) }
            case UInt8(ascii: "\\"):
                index += 1
                try parseEscape(into: &unescaped)
            case ..<0x20:
                throw error("raw control character in a string")
            default:
                unescaped.append(byte)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(JSONParseError) {
        guard index < bytes.count else { throw error("unterminated escape") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "/"): out.append(UInt8(ascii: "/"))
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(UInt8(ascii: "\n"))
        case UInt8(ascii: "r"): out.append(UInt8(ascii: "\r"))
        case UInt8(ascii: "t"): out.append(UInt8(ascii: "\t"))
        case UInt8(ascii: "u"):
            var scalar = UInt32(try parseHex4())
            if (0xD800...0xDBFF).contains(scalar) {
                guard consume(UInt8(ascii: "\\")), consume(UInt8(ascii: "u")) else {
                    throw error("unpaired surrogate in \\u escape")
                }
                let low = UInt32(try parseHex4())
                guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in \\u escape") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error("unpaired surrogate in \\u escape")
            }
            out.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
        default:
            throw error("invalid escape")
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt16 {
        guard index + 4 <= bytes.count else { throw error("short \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// Reads a string that most requests carry (`"2.0"`, a common method
    /// or param name) as the literal it equals, making no `String` of its
    /// bytes; nil, having read nothing, for any other value (the parser is
    /// on its first byte). The bytes are compared as one word with each
    /// candidate's, rather than decoded and checked each time, or compared
    /// byte by byte (docs/PERFORMANCE.md).
    package mutating func parseCommonString() -> String? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        let word: UInt64
        let end: Int
        if let short = shortString() {
            (word, end) = (short.word, index + 1 + short.count)
        } else {
            guard let stringEnd = printableASCIIStringEnd(maxCount: 7) else { return nil }
            (word, end) = (self.word(from: index + 1, count: stringEnd - index - 1), stringEnd)
        }
        let common: String? = switch word {
        case ShortWord.id: "id"
        case ShortWord.version: "2.0"
        case ShortWord.get: "get"
        case ShortWord.wait: "wait"
        case ShortWord.value: "value"
        case ShortWord.create: "create"
        case ShortWord.reject: "reject"
        case ShortWord.reason: "reason"
        case ShortWord.resolve: "resolve"
        default: nil
        }
        if common != nil { index = end + 1 }
        return common
    }

    /// The bytes of a string of at most 8 bytes as one word, the first in
    /// its lowest byte and zeros after the last: with no zero byte in the
    /// string (JSON strings here hold no control character), equal words
    /// are equal strings, whatever their length. See ``ShortWord``.
    package static func word(_ raw: UnsafeBufferPointer<UInt8>) -> UInt64 {
        assert(raw.count <= 8, "a word holds 8 bytes")
        var word: UInt64 = 0
        var shift: UInt64 = 0
        for byte in raw {
            word |= UInt64(byte) &<< shift
            shift &+= 8
        }
        return word
    }

    /// ``word(_:)`` of the `count` (at most 8) bytes from `start`: one load
    /// of 8 bytes, masked, when the text goes on that far (a request's keys
    /// and short values are followed by more of the line), byte by byte
    /// near its end.
    package func word(from start: Int, count: Int) -> UInt64 {
        assert(count <= 8 && start + count <= bytes.count, "a word holds 8 bytes of the text")
        guard start + 8 <= bytes.count else { return Self.word(UnsafeBufferPointer(rebasing: bytes[start..<(start + count)])) }
        let loaded = UInt64(littleEndian: UnsafeRawPointer(bytes.baseAddress! + start).loadUnaligned(as: UInt64.self))
        return count == 8 ? loaded : loaded & ((1 &<< UInt64(count &* 8)) &- 1)
    }

    /// The string the parser is on (at its opening quote) as its
    /// ``word(_:)`` and its length, if it is at most 7 bytes of printable
    /// ASCII without escapes and at least 8 bytes of the text follow the
    /// quote (a request's keys and short values are followed by more of the
    /// line); nil otherwise. Reads nothing: the caller moves past it.
    ///
    /// The 8 bytes after the quote are loaded at once, and the closing quote
    /// found and the bytes before it checked a word at a time (see
    /// ``ByteLanes``), rather than read byte by byte
    /// (``printableASCIIStringEnd(maxCount:)``) and then made into a word:
    /// a line holds seven or eight such keys and short strings. Always
    /// inlined: called (12 times a create + resolve pair), it would pass its
    /// result in memory (docs/PERFORMANCE.md).
    @inline(__always)
    package func shortString() -> (word: UInt64, count: Int)? {
        guard index &+ 9 <= bytes.count else { return nil }
        let loaded = ByteLanes.load(bytes, at: index &+ 1)
        let quotes = ByteLanes.equal(loaded, UInt8(ascii: "\""))
        guard quotes != 0 else { return nil }
        let count = ByteLanes.firstMarked(quotes)
        let lanes: UInt64 = (1 &<< UInt64(count &* 8)) &- 1
        let text = loaded & lanes
        // Printable ASCII: no byte from 0x80 up, and nothing to escape.
        guard text & ByteLanes.highBits == 0, ByteLanes.special(loaded) & lanes == 0 else { return nil }
        return (text, count)
    }

    /// Reads the string ``shortString()`` finds and returns its word; nil,
    /// having read nothing, for any other string.
    package mutating func parseShortString() -> UInt64? {
        guard let short = shortString() else { return nil }
        index += short.count + 2
        return short.word
    }

    /// Moves past `count` bytes a reader of its own has read (see `RequestLine`).
    package mutating func advance(by count: Int) {
        index += count
    }

    /// Where the string the parser is on (at its opening quote) ends, the
    /// index of its closing quote, if it is printable ASCII (0x20 to 0x7E)
    /// written without escapes, of at most `maxCount` bytes; nil for any
    /// other value. Reads nothing.
    ///
    /// Eight bytes a step (see ``ByteLanes``) up to the first quote,
    /// backslash or control character, then that byte, rather than byte by
    /// byte all the way (docs/PERFORMANCE.md).
    package func printableASCIIStringEnd(maxCount: Int) -> Int? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        let start = index + 1
        var end = start
        while end &+ 8 <= bytes.count && end &- start <= maxCount {
            let word = ByteLanes.load(bytes, at: end)
            let lane = ByteLanes.firstMarked(ByteLanes.special(word))
            let before: UInt64 = lane == 8 ? .max : (1 &<< UInt64(lane &* 8)) &- 1
            guard ByteLanes.atLeastDelete(word) & before == 0 else { return nil }
            end &+= lane
            if lane < 8 { break }
        }
        while end < bytes.count, end - start <= maxCount {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") { return end }
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
            end += 1
        }
        return nil
    }

    /// Reads a string of printable ASCII written without escapes, of at
    /// most `maxCount` bytes (the parser is on its opening quote), and
    /// returns its bytes, making no `String`. Returns nil, having read
    /// nothing, for any other value: read that one with ``parseString()``.
    package mutating func parseASCIIStringBytes(maxCount: Int) -> UnsafeBufferPointer<UInt8>? {
        guard let end = printableASCIIStringEnd(maxCount: maxCount) else { return nil }
        let text = UnsafeBufferPointer(rebasing: bytes[(index + 1)..<end])
        index = end + 1
        return text
    }

    /// The string of `ascii`, bytes known to be ASCII. Written in place:
    /// up to 15 bytes (most ids), the string is made in its own bits and
    /// told ASCII by a mask, where `String(decoding:as:)` checks the bytes
    /// one by one first (docs/PERFORMANCE.md).
    private static func asciiString(_ ascii: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: ascii.count) { buffer in
            buffer.initialize(fromContentsOf: ascii)
        }
    }

    private func validated(_ utf8: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> String {
        guard let text = String(validating: utf8, as: UTF8.self) else { throw error("invalid UTF-8 in a string") }
        return text
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        if let small = parseSmallInteger() { return .int(small) }
        let start = index
        let negative = consume(UInt8(ascii: "-"))
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
        // Accumulate the integer part exactly while it fits.
        var magnitude: UInt64 = 0
        var exact = true
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                if overflow1 || overflow2 { exact = false } else { magnitude = sum }
                index += 1
            }
        }
        var isInteger = true
        if consume(UInt8(ascii: ".")) {
            isInteger = false
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number: digits expected after '.'") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            _ = consume(UInt8(ascii: "+")) || consume(UInt8(ascii: "-"))
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number: digits expected in exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger, exact {
            if negative, magnitude <= UInt64(Int.max) + 1 { return .int(Int(truncatingIfNeeded: 0 &- magnitude)) }
            if !negative, magnitude <= UInt64(Int.max) { return .int(Int(magnitude)) }
        }
        let written = UnsafeBufferPointer(rebasing: bytes[start..<index])
        let text = String(decoding: written, as: UTF8.self)
        if isInteger || JSONNumber.hasMoreDigitsThanDouble(written) { return .number(JSONNumber(unchecked: text)) }
        // Past the range either way: infinite, or a zero or subnormal that lost digits (1e-400 → 0, 3e-324 → 5e-324).
        guard let double = Double(text), double.isFinite,
              double.isNormal || (double == 0 && !JSONNumber.hasNonZeroDigit(written))
        else { return .number(JSONNumber(unchecked: text)) }
        if double.rounded() == double, abs(double) <= 9_007_199_254_740_992 { return .int(Int(double)) }
        return .double(double)
    }

    /// Reads a number written as 1 to 18 digits, the first not 0: the
    /// commonest in requests (ids, counts, values), which no `Int`
    /// overflows. Returns nil, having read nothing, for any other number.
    /// It skips the general reading's overflow checks, sign, fraction and
    /// exponent (docs/PERFORMANCE.md).
    @inline(__always)
    private mutating func parseSmallInteger() -> Int? {
        var end = index
        var value = 0
        while end < bytes.count {
            let digit = bytes[end] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            value = value &* 10 &+ Int(digit)
            end &+= 1
        }
        let count = end &- index
        guard count > 0, count <= 18, bytes[index] != UInt8(ascii: "0") else { return nil }
        if end < bytes.count {
            let next = bytes[end]
            guard next != UInt8(ascii: "."), next != UInt8(ascii: "e"), next != UInt8(ascii: "E") else { return nil }
        }
        index = end
        return value
    }

    // MARK: Bytes

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func expect(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of input") }
        let matches = literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { throw error("unexpected character") }
        index += count
    }

    package mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
            default: return
            }
        }
    }

    private func error(_ message: String) -> JSONParseError {
        JSONParseError(message: message, offset: index)
    }
}

/// Why a text is not JSON, and at which byte.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    /// Byte offset in the input where parsing stopped.
    public let offset: Int

    public var description: String { "\(message) at byte \(offset)" }
}

/// ``JSONParser/word(_:)`` of the short strings requests are read by,
/// written out (a literal's word is not a compile-time constant otherwise);
/// JSONParserTests checks each against the word of its text.
package enum ShortWord {
    package static let id: UInt64 = 0x6469
    static let version: UInt64 = 0x30_2E_32  // "2.0"
    package static let get: UInt64 = 0x74_65_67
    package static let wait: UInt64 = 0x74_69_61_77
    static let value: UInt64 = 0x65_75_6C_61_76
    package static let create: UInt64 = 0x65_74_61_65_72_63
    package static let reject: UInt64 = 0x74_63_65_6A_65_72
    static let reason: UInt64 = 0x6E_6F_73_61_65_72
    package static let resolve: UInt64 = 0x65_76_6C_6F_73_65_72
    package static let jsonrpc: UInt64 = 0x63_70_72_6E_6F_73_6A
    package static let method: UInt64 = 0x64_6F_68_74_65_6D
    package static let params: UInt64 = 0x73_6D_61_72_61_70
}
