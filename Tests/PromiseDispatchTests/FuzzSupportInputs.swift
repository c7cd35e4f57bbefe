import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseTestSupport

/// Makes hostile and half-valid request lines from a seed: valid requests of
/// every method over a small shared pool of ids (so they meet each other:
/// waits before creates, combinators over settled inputs, exec children),
/// params of the wrong type, byte-level mutations of valid lines, token soup,
/// random bytes, batches, deep nesting, huge numbers and bad UTF-8.
struct FuzzInputs {
    var random: SeededRandom
    /// The dispatcher's batch limit, to aim at both sides of it.
    let maxBatchSize: Int

    init(seed: UInt64, maxBatchSize: Int) {
        random = SeededRandom(seed: seed)
        self.maxBatchSize = maxBatchSize
    }

    static let methods = [
        "create", "resolve", "reject", "cancel", "get", "list", "wait", "subscribe", "unsubscribe", "then",
        "progress", "all", "any", "race", "allSettled", "forget", "info",
    ]
    /// Ids the valid requests share, so that they act on each other.
    static let idPool = ["a", "b", "c", "build/lib", "ünïcødé ✓", "p1", "p2", "x y", "a/b/c", "z"]
    static let paramNames = [
        "id", "name", "timeoutMs", "lease", "ifExists", "value", "reason", "state", "prefix", "limit", "cursor",
        "ids", "childId", "on", "exec", "cwd", "env", "progress", "message", "policy",
    ]
    /// Numbers at the edges: of Int, of Double, of 2^53, of the exponent range.
    static let edgeNumbers = [
        "0", "-0", "1", "-1", "0.5", "1e3", "2.0", "1E+2", "1e-400", "1e308", "1.7976931348623157e308", "1e309",
        "-1e309", "9007199254740992", "9007199254740993", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "123456789012345678901234567890", "4.9e-324", "1e-7",
        "0.1", "18446744073709551616", "00", "01", "-", "1.", ".5", "1e", "+1", "0x10", "NaN", "Infinity",
    ]

    // MARK: Lines

    /// One input line (it may hold raw newlines: then it frames as several).
    mutating func line() -> [UInt8] {
        switch random.int(0..<100) {
        case 0..<25: return text(request(validParams: true))
        case 25..<41: return mutate(text(request(validParams: random.percent(70))))
        case 41..<49: return text(request(validParams: false))
        case 49..<55: return text(batch())
        case 55..<64: return tokenSoup()
        case 64..<71: return randomBytes()
        case 71..<73: return deepNesting()
        case 73..<80: return hugeNumbers()
        case 80..<88: return badStrings()
        case 88..<97: return text(badEnvelope())
        default: return random.pick([[], Array(" \t ".utf8), [0x0D], Array("  \r".utf8), [0x09]])
        }
    }

    // MARK: Requests

    /// A request or (one time in six) a notification, of a known method or not.
    mutating func request(validParams: Bool) -> JSONValue {
        let method = random.percent(95) ? random.pick(Self.methods) : string()
        var members: [String: JSONValue] = ["jsonrpc": "2.0", "method": .string(method)]
        if !random.percent(16) { members["id"] = requestID() }
        let params = validParams ? plausibleParams(method) : wrongParams(method)
        switch random.int(0..<10) {
        case 0: break  // absent
        case 1: members["params"] = .null
        default: members["params"] = .object(params)
        }
        return .object(members)
    }

    mutating func requestID() -> JSONValue {
        switch random.int(0..<10) {
        case 0..<5: return .int(random.int(0..<1000))
        case 5..<7: return .string(random.percent(50) ? "r\(random.int(0..<100))" : string())
        case 7: return .null
        case 8: return .double(Double(random.int(-1000...1000)) / 8)
        default: return .int(random.pick([Int.max, Int.min, -1, 0, 1 << 53, (1 << 53) + 1]))
        }
    }

    mutating func promiseID() -> JSONValue {
        switch random.int(0..<20) {
        case 0: return .string(String(repeating: "i", count: random.pick([255, 256, 257])))
        case 1: return .string(string())
        case 2: return .string("")
        case 3: return .string(random.pick(["a\u{0}", "\u{7F}", "x\u{2028}", "\u{E000}", "\u{85}", "\n", "a\tb"]))
        default: return .string(random.pick(Self.idPool))
        }
    }

    mutating func promiseIDs() -> JSONValue {
        .array((0..<random.int(0...4)).map { _ in promiseID() })
    }

    /// Params of the right types (mostly), for `method`.
    mutating func plausibleParams(_ method: String) -> [String: JSONValue] {
        var params: [String: JSONValue] = [:]
        func maybe(_ key: String, _ percent: Int, _ value: JSONValue) {
            if random.percent(percent) { params[key] = value }
        }
        switch method {
        case "create":
            maybe("id", 85, promiseID())
            maybe("name", 20, .string(string()))
            maybe("timeoutMs", 20, .int(random.int(0...50)))
            maybe("lease", 20, .bool(random.percent(50)))
            maybe("ifExists", 30, .string(random.pick(["error", "get"])))
        case "resolve":
            params["id"] = promiseID()
            maybe("value", 80, value(depth: 3))
        case "reject":
            params["id"] = promiseID()
            switch random.int(0..<4) {
            case 0: break
            case 1: params["reason"] = .string(string())
            case 2: params["reason"] = ["message": .string(string()), "code": .int(random.int(-5...5))]
            default: params["reason"] = ["message": .string(string()), "data": value(depth: 2)]
            }
        case "cancel", "get":
            params["id"] = promiseID()
        case "list":
            maybe("state", 30, .string(random.pick(["pending", "fulfilled", "rejected", "cancelled", "other"])))
            maybe("prefix", 30, .string(random.pick(["a", "b", "", "build/"])))
            // Mostly small pages: a full page of records is slow to check in a debug build.
            maybe("limit", 90, .int(random.int(0...3)))
            maybe("cursor", 20, .string(random.pick(["1", "2", "14", "x", "-1", "99999999999999999999"])))
        case "wait":
            params["id"] = promiseID()
            maybe("timeoutMs", 50, .int(random.int(0...40)))
        case "subscribe", "unsubscribe", "forget":
            params["ids"] = promiseIDs()
        case "then":
            params["id"] = promiseID()
            maybe("childId", 60, promiseID())
            maybe("on", 40, .string(random.pick(["fulfilled", "rejected", "settled", "never"])))
            if random.percent(40) {
                params["exec"] = .array([.string(random.pick(["true", "sh", "", "/bin/cat"]))]
                    + (0..<random.int(0...2)).map { _ in .string(string()) })
                maybe("cwd", 30, .string(random.pick(["/", "/tmp", "relative", ""])))
                maybe("env", 30, ["K": .string(string()), "L": "1"])
            }
            maybe("ifExists", 20, .string(random.pick(["error", "get"])))
        case "progress":
            params["id"] = promiseID()
            params["progress"] = random.percent(80) ? .double(Double(random.int(0...8)) / 8) : .double(-0.5)
            maybe("message", 40, .string(string()))
        case "all", "any", "race", "allSettled":
            params["ids"] = promiseIDs()
            maybe("id", 40, promiseID())
            maybe("name", 20, .string(string()))
            maybe("policy", 40, .string(random.pick(["fail-fast", "all-errors", "ignore-errors", "nulls", "bad"])))
            maybe("ifExists", 20, .string(random.pick(["error", "get"])))
        default:
            maybe("id", 30, promiseID())
        }
        return params
    }

    /// Params whose names the method knows, with values of any type.
    mutating func wrongParams(_ method: String) -> [String: JSONValue] {
        var params = plausibleParams(method)
        // Sorted: dictionary order changes from one process to the next, a seed's inputs must not.
        let keys = params.keys.isEmpty ? [random.pick(Self.paramNames)] : params.keys.sorted()
        for _ in 0..<random.int(1...3) {
            params[random.percent(80) ? random.pick(keys) : random.pick(Self.paramNames)] = value(depth: 2)
        }
        return params
    }

    /// A batch: empty, within the limit (mixed members) or just over it.
    mutating func batch() -> JSONValue {
        let count: Int
        switch random.int(0..<10) {
        case 0: count = 0
        case 1: count = maxBatchSize + random.int(1...3)
        case 2: count = maxBatchSize
        default: count = random.int(1...4)
        }
        return .array((0..<count).map { _ in
            switch random.int(0..<10) {
            case 0: return value(depth: 1)
            case 1: return badEnvelope()
            case 2: return .array([])
            default: return request(validParams: random.percent(75))
            }
        })
    }

    /// Objects that are almost requests: wrong version, wrong id or method types, params not an object.
    mutating func badEnvelope() -> JSONValue {
        var members: [String: JSONValue] = ["jsonrpc": "2.0", "method": .string(random.pick(Self.methods))]
        if random.percent(70) { members["id"] = requestID() }
        switch random.int(0..<8) {
        case 0: members["jsonrpc"] = random.pick(["1.0", "2", .double(2.0), .null, "2.0 ", .int(2)])
        case 1: members["jsonrpc"] = nil
        case 2: members["method"] = random.percent(50) ? nil : value(depth: 1)
        case 3: members["id"] = random.pick([.bool(true), .array([1]), ["a": 1], .bool(false)])
        case 4: members["params"] = random.pick([.array([]), .array(["a"]), "a", .int(1), .bool(true)])
        case 5: members[random.pick(["extra", "result", "error", "ID", ""])] = value(depth: 1)
        case 6: members["method"] = .string(random.pick(["", "CREATE", "create ", "rpc.discover", "constructor"]))
        default:
            var params: [String: JSONValue] = [string(): value(depth: 1)]
            params["id"] = promiseID()
            members["params"] = .object(params)
        }
        return .object(members)
    }

    // MARK: Values

    mutating func value(depth: Int) -> JSONValue {
        switch random.int(0..<(depth > 0 ? 9 : 6)) {
        case 0: return .null
        case 1: return .bool(random.percent(50))
        case 2: return .int(random.percent(80) ? random.int(-100...100) : Int(bitPattern: UInt(random.next())))
        case 3: return .double(random.percent(80) ? Double(random.int(-1000...1000)) / 7 : Double(bitPattern: random.next()))
        case 4, 5: return .string(string())
        case 6, 7: return .array((0..<random.int(0...3)).map { _ in value(depth: depth - 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<random.int(0...3) { members[string()] = value(depth: depth - 1) }
            return .object(members)
        }
    }

    /// Short text from a mix of ASCII, JSON syntax, escapes-to-be, controls and wider scalars.
    mutating func string() -> String {
        let pieces: [String] = [
            "a", "b", "id", "2.0", "\"", "\\", "/", "{", "}", "[", "]", ":", ",", " ", "\t", "\n", "\r", "\u{0}",
            "\u{1F}", "\u{7F}", "é", "ü", "✓", "\u{2028}", "\u{FEFF}", "😀", "\u{10FFFF}", "\u{E000}", "null", "wait",
        ]
        var text = ""
        for _ in 0..<random.int(0...6) { text += random.pick(pieces) }
        return text
    }

    // MARK: Text

    /// JSON text for `value`: usually the daemon's own compact writer, else
    /// one with random whitespace and `\u` escapes, to reach other parser paths.
    mutating func text(_ value: JSONValue) -> [UInt8] {
        if random.percent(75) { return value.serialized() }
        var out: [UInt8] = []
        write(value, into: &out)
        return out
    }

    private mutating func whitespace(into out: inout [UInt8]) {
        guard random.percent(15) else { return }
        for _ in 0..<random.int(1...2) { out.append(random.pick([0x20, 0x09, 0x0D])) }
    }

    private mutating func write(_ value: JSONValue, into out: inout [UInt8]) {
        whitespace(into: &out)
        switch value {
        case .string(let text): writeString(text, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            whitespace(into: &out)
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().shuffled(using: &random).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                whitespace(into: &out)
                writeString(key, into: &out)
                whitespace(into: &out)
                out.append(UInt8(ascii: ":"))
                write(members[key]!, into: &out)
            }
            whitespace(into: &out)
            out.append(UInt8(ascii: "}"))
        default:
            value.write(into: &out)
        }
        whitespace(into: &out)
    }

    private mutating func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar == "\"" || scalar == "\\" || random.percent(5) {
                if scalar.value > 0xFFFF {
                    let v = scalar.value - 0x10000
                    out.append(contentsOf: hexEscape(0xD800 + (v >> 10)))
                    out.append(contentsOf: hexEscape(0xDC00 + (v & 0x3FF)))
                } else if scalar == "/" && random.percent(50) {
                    out.append(contentsOf: #"\/"#.utf8)
                } else {
                    out.append(contentsOf: hexEscape(scalar.value))
                }
            } else {
                out.append(contentsOf: String(scalar).utf8)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private mutating func hexEscape(_ value: UInt32) -> [UInt8] {
        let digits = String(value, radix: 16)
        let padded = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        return Array(("\\u" + (random.percent(50) ? padded.uppercased() : padded)).utf8)
    }

    // MARK: Garbage

    /// Byte-level damage to a line: flips, inserts, deletes, duplicated and
    /// swapped spans, truncation, spliced-in tokens.
    mutating func mutate(_ line: [UInt8]) -> [UInt8] {
        var bytes = line
        for _ in 0..<random.int(1...3) {
            let count = bytes.count
            let at = random.int(0...count)
            switch random.int(0..<9) {
            case 0 where count > 0:
                let index = random.int(0..<count)
                bytes[index] ^= 1 << UInt8(random.int(0..<8))
            case 1 where count > 0:
                bytes[random.int(0..<count)] = random.byte()
            case 2:
                bytes.insert(random.pick(Array("{}[]\",:\\ 0-.eE\"tfn\u{7F}".utf8) + [0x00, 0x80, 0xC3, 0xFF, 0x0D]),
                             at: at)
            case 3 where count > 0:
                let start = random.int(0..<count)
                bytes.removeSubrange(start..<min(count, start + random.int(1...8)))
            case 4 where count > 0:
                let start = random.int(0..<count)
                let span = bytes[start..<min(count, start + random.int(1...16))]
                bytes.insert(contentsOf: span, at: random.int(0...count))
            case 5 where count > 1:
                bytes.removeSubrange(random.int(0..<count)...)
            case 6:
                let token = random.pick([#""id":1,"#, #""method":"wait""#, "null", "[", "]]", "}", "{", #"\u0000"#,
                                          #"\ud800"#, "1e999", "\u{2028}", #","params":[]"#])
                bytes.insert(contentsOf: Array(token.utf8), at: at)
            case 7 where count > 2:
                let a = random.int(0..<count / 2)
                let b = random.int(count / 2..<count)
                bytes.swapAt(a, b)
            default:
                bytes.insert(random.pick([0x0A, 0x0D, 0x20]), at: at)
            }
        }
        return bytes
    }

    mutating func tokenSoup() -> [UInt8] {
        let tokens = [
            "{", "}", "[", "]", ":", ",", #""jsonrpc""#, #""2.0""#, #""id""#, #""method""#, #""params""#, "1", "-1",
            "null", "true", "false", #""create""#, #""wait""#, #""a""#, "0.5", "1e5", " ", #""\u00e9""#, #""\""#,
            #"""#, "\\", "tru", "nul", "-", "0", "\t", #""ids""#,
        ]
        var out: [UInt8] = []
        for _ in 0..<random.int(1...30) { out += Array(random.pick(tokens).utf8) }
        return out
    }

    mutating func randomBytes() -> [UInt8] {
        (0..<random.int(1...64)).map { _ in
            random.percent(30) ? random.pick(Array("{}[]\":,\\ ".utf8)) : random.byte()
        }
    }

    /// Nesting around the parser's 512-level limit and the daemon's
    /// `maxValueDepth` (128), as a whole line or inside params.
    mutating func deepNesting() -> [UInt8] {
        let depth = random.pick([100, 126, 127, 128, 300, 510, 511, 512, 513, 5_000])
        let open = random.percent(50) ? "[" : #"{"a":"#
        let close = open == "[" ? "]" : "}"
        var inner = String(repeating: open, count: depth) + "1"
        if random.percent(80) { inner += String(repeating: close, count: depth) }
        switch random.int(0..<3) {
        case 0: return Array(inner.utf8)
        case 1:
            return Array(#"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"id":"\#(random.pick(Self.idPool))","value":\#(inner)}}"#.utf8)
        default:
            return Array(#"{"jsonrpc":"2.0","id":\#(inner),"method":"info"}"#.utf8)
        }
    }

    /// Edge numbers as ids and as numeric params.
    mutating func hugeNumbers() -> [UInt8] {
        let number = random.pick(Self.edgeNumbers)
        let id = random.percent(50) ? number : "\(random.int(0..<100))"
        let place: String
        switch random.int(0..<6) {
        case 0: place = #""create","params":{"timeoutMs":\#(number)}"#
        case 1: place = #""wait","params":{"id":"a","timeoutMs":\#(number)}"#
        case 2: place = #""progress","params":{"id":"a","progress":\#(number)}"#
        case 3: place = #""list","params":{"limit":\#(number)}"#
        case 4: place = #""reject","params":{"id":"b","reason":{"message":"m","code":\#(number)}}"#
        default: place = #""resolve","params":{"id":"c","value":[\#(number),\#(number)]}"#
        }
        return Array(#"{"jsonrpc":"2.0","id":\#(id),"method":\#(place)}"#.utf8)
    }

    /// Invalid UTF-8 and bad escapes inside strings of otherwise valid requests.
    mutating func badStrings() -> [UInt8] {
        let bad: [[UInt8]] = [
            [0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0x80], [0xC3],
            Array(#"\ud800"#.utf8), Array(#"\udc00\ud800"#.utf8), Array(#"\u12"#.utf8), Array(#"\x41"#.utf8),
            Array(#"\uD83D\uDE00"#.utf8), [0x01], [0x1F], [0x7F], Array("\u{FEFF}".utf8),
        ]
        let piece = random.pick(bad)
        let where_ = random.int(0..<3)
        var out = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
        out += where_ == 0 ? [0x22] + piece + [0x22] : Array("7".utf8)
        out += Array(#","method":"create","params":{"id":""#.utf8)
        if where_ == 1 { out += piece }
        out += Array(#"x","name":""#.utf8)
        if where_ == 2 { out += piece }
        out += Array(#""}}"#.utf8)
        return out
    }
}
