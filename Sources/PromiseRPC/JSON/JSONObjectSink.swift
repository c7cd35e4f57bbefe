/// Where the members of a JSON object go, one at a time: straight into
/// JSON text (``JSONObjectWriter``) or into a `JSONValue`
/// (``JSONObjectBuilder``).
///
/// Records and stored documents list their members once, as a function
/// generic over the sink, and get both forms from that one list: the text
/// for the hot paths (answers, commits), the value for the rest.
///
/// Members must be given in sorted key order. The writer writes them as
/// they come, and `JSONValue.write` sorts an object's members, so this is
/// what keeps the two forms' text the same.
protocol JSONObjectSink {
    mutating func value(_ key: StaticString, _ value: JSONValue)
    mutating func string(_ key: StaticString, _ value: String)
    mutating func strings(_ key: StaticString, _ values: [String])
}

extension JSONObjectSink {
    /// A string member, left out when `value` is nil.
    mutating func string(_ key: StaticString, ifPresent value: String?) {
        if let value { string(key, value) }
    }

    /// An array-of-strings member, left out when `values` is nil.
    mutating func strings(_ key: StaticString, ifPresent values: [String]?) {
        if let values { strings(key, values) }
    }

    /// A member, left out when `value` is nil.
    mutating func value(_ key: StaticString, ifPresent value: JSONValue?) {
        if let value { self.value(key, value) }
    }

    /// A string member, null when `value` is nil.
    mutating func string(_ key: StaticString, orNull value: String?) {
        if let value { string(key, value) } else { self.value(key, .null) }
    }

    /// `true`, or nothing when false.
    mutating func flag(_ key: StaticString, _ isSet: Bool) {
        if isSet { value(key, .bool(true)) }
    }
}

/// Writes an object's JSON text member by member, without building it as a
/// `JSONValue` first.
///
/// ```swift
/// var out: [UInt8] = []
/// JSONObjectWriter.append(to: &out) { object in
///     object.string("id", "a")
///     object.value("n", .int(1))
/// }
/// // {"id":"a","n":1}
/// ```
struct JSONObjectWriter: JSONObjectSink {
    private var bytes: [UInt8]
    private var isEmpty = true

    /// Appends the object whose members `members` gives to `out`.
    static func append(to out: inout [UInt8], _ members: (inout JSONObjectWriter) -> Void) {
        // The writer takes `out`'s buffer for the while, so that it appends
        // in place rather than to a copy.
        var writer = JSONObjectWriter(bytes: [])
        swap(&writer.bytes, &out)
        members(&writer)
        if writer.isEmpty { writer.bytes.append(UInt8(ascii: "{")) }
        writer.bytes.append(UInt8(ascii: "}"))
        swap(&writer.bytes, &out)
    }

    mutating func value(_ key: StaticString, _ value: JSONValue) {
        self.key(key)
        value.write(into: &bytes)
    }

    mutating func string(_ key: StaticString, _ value: String) {
        self.key(key)
        JSONValue.writeString(value, into: &bytes)
    }

    mutating func strings(_ key: StaticString, _ values: [String]) {
        self.key(key)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONValue.writeString(value, into: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// A member whose value `writeValue` appends as JSON text.
    mutating func json(_ key: StaticString, _ writeValue: (inout [UInt8]) -> Void) {
        self.key(key)
        writeValue(&bytes)
    }

    /// The separator and `"key":`, in one append rather than five, each
    /// checking the array's capacity and uniqueness: a record has a dozen
    /// members and most answers carry one (313 fewer instructions per
    /// create+resolve pair). Keys are the caller's own names and need no
    /// escaping.
    private mutating func key(_ key: StaticString) {
        let separator = isEmpty ? UInt8(ascii: "{") : UInt8(ascii: ",")
        isEmpty = false
        key.withUTF8Buffer { name in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: name.count + 4) { member in
                member[0] = separator
                member[1] = UInt8(ascii: "\"")
                _ = UnsafeMutableBufferPointer(rebasing: member[2...]).initialize(fromContentsOf: name)
                member[name.count + 2] = UInt8(ascii: "\"")
                member[name.count + 3] = UInt8(ascii: ":")
                bytes.append(contentsOf: member)
            }
        }
    }
}

/// Builds an object's members as a `JSONValue` dictionary.
struct JSONObjectBuilder: JSONObjectSink {
    private(set) var members: [String: JSONValue] = [:]

    mutating func value(_ key: StaticString, _ value: JSONValue) {
        members[key.description] = value
    }

    mutating func string(_ key: StaticString, _ value: String) {
        members[key.description] = .string(value)
    }

    mutating func strings(_ key: StaticString, _ values: [String]) {
        members[key.description] = .array(values.map(JSONValue.string))
    }
}
