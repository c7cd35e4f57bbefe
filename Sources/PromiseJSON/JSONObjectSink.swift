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
package protocol JSONObjectSink: ~Copyable {
    mutating func value(_ key: StaticString, _ value: JSONValue)
    /// A member whose value's JSON text is already written (`text`, if not
    /// nil): a text sink copies it instead of writing `value` again.
    mutating func value(_ key: StaticString, _ value: JSONValue, text: [UInt8]?)
    mutating func string(_ key: StaticString, _ value: String)
    mutating func strings(_ key: StaticString, _ values: [String])
    /// An integer member; the same as `value(key, .int(value))`.
    mutating func int(_ key: StaticString, _ value: Int)
    /// A number member; the same as `value(key, .double(value))`.
    mutating func double(_ key: StaticString, _ value: Double)
    /// A null member; the same as `value(key, .null)`.
    mutating func null(_ key: StaticString)
    /// A string member whose value is a literal needing no escape (a state
    /// name); the same as `string(key, value.description)`.
    mutating func string(_ key: StaticString, literal value: StaticString)
}

extension JSONObjectSink where Self: ~Copyable {
    package mutating func value(_ key: StaticString, _ value: JSONValue, text: [UInt8]?) {
        self.value(key, value)
    }

    package mutating func int(_ key: StaticString, _ value: Int) {
        self.value(key, .int(value))
    }

    package mutating func double(_ key: StaticString, _ value: Double) {
        self.value(key, .double(value))
    }

    package mutating func null(_ key: StaticString) {
        value(key, .null)
    }

    package mutating func string(_ key: StaticString, literal value: StaticString) {
        string(key, value.description)
    }

    /// A string member, left out when `value` is nil.
    @inline(__always)
    package mutating func string(_ key: StaticString, ifPresent value: String?) {
        if let value { string(key, value) }
    }

    /// An array-of-strings member, left out when `values` is nil.
    @inline(__always)
    package mutating func strings(_ key: StaticString, ifPresent values: [String]?) {
        if let values { strings(key, values) }
    }

    /// A member, left out when `value` is nil.
    @inline(__always)
    package mutating func value(_ key: StaticString, ifPresent value: JSONValue?) {
        if let value { self.value(key, value) }
    }

    /// A string member, null when `value` is nil.
    @inline(__always)
    package mutating func string(_ key: StaticString, orNull value: String?) {
        if let value { string(key, value) } else { null(key) }
    }

    /// `true`, or nothing when false.
    @inline(__always)
    package mutating func flag(_ key: StaticString, _ isSet: Bool) {
        if isSet { value(key, .bool(true)) }
    }
}

/// Writes an object's JSON text member by member, without building it as a
/// `JSONValue` first.
///
/// ```swift
/// let text = JSONTextBuffer.bytes { text in
///     JSONObjectWriter.append(to: &text) { object in
///         object.string("id", "a")
///         object.value("n", .int(1))
///     }
/// }
/// // {"id":"a","n":1}
/// ```
package struct JSONObjectWriter: JSONObjectSink, ~Copyable {
    private var text: JSONTextBuffer
    private var isEmpty = true

    /// Appends the object whose members `members` gives to `text`.
    package static func append(to text: inout JSONTextBuffer, _ members: (inout JSONObjectWriter) -> Void) {
        // The writer holds the text for the while, and hands it back.
        var writer = JSONObjectWriter(text: text)
        members(&writer)
        if writer.isEmpty { writer.text.append(UInt8(ascii: "{")) }
        writer.text.append(UInt8(ascii: "}"))
        text = writer.text
    }

    private init(text: consuming JSONTextBuffer) {
        self.text = text
    }

    // Every member is inlined into its caller (`recordMembers`, specialised
    // for this writer), where its key is a constant: copying it takes a few
    // moves, the capacity check is shared, and no call is made: a call
    // would cost more than most members write (docs/PERFORMANCE.md).

    @inline(__always)
    package mutating func value(_ key: StaticString, _ value: JSONValue) {
        self.key(key)
        value.write(to: &text)
    }

    @inline(__always)
    package mutating func value(_ key: StaticString, _ value: JSONValue, text written: [UInt8]?) {
        guard let written else { return self.value(key, value) }
        self.key(key)
        text.append(written)
    }

    @inline(__always)
    package mutating func string(_ key: StaticString, _ value: String) {
        self.key(key)
        JSONValue.writeString(value, to: &text)
    }

    // The three below write their value in place: made into a `JSONValue`
    // and written through its `write(to:)`, each would cost a call, a
    // switch, and a copy and a destruction of the enum (a record has four
    // of them).

    @inline(__always)
    package mutating func int(_ key: StaticString, _ value: Int) {
        self.key(key)
        JSONValue.writeInt(value, to: &text)
    }

    @inline(__always)
    package mutating func double(_ key: StaticString, _ value: Double) {
        self.key(key)
        JSONValue.writeDouble(value, to: &text)
    }

    @inline(__always)
    package mutating func null(_ key: StaticString) {
        member(key, "null", quoted: false)
    }

    @inline(__always)
    package mutating func string(_ key: StaticString, literal value: StaticString) {
        assert(value.description.utf8.allSatisfy { $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") },
               "a literal string member needs no escape")
        member(key, value, quoted: true)
    }

    /// A member whose value is JSON text known at compile time.
    @inline(__always)
    package mutating func literal(_ key: StaticString, _ json: StaticString) {
        member(key, json, quoted: false)
    }

    @inline(__always)
    package mutating func strings(_ key: StaticString, _ values: [String]) {
        guard !values.isEmpty else { return literal(key, "[]") }
        self.key(key)
        text.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ",")) }
            JSONValue.writeString(value, to: &text)
        }
        text.append(UInt8(ascii: "]"))
    }

    /// A member whose value `writeValue` appends as JSON text.
    @inline(__always)
    package mutating func json(_ key: StaticString, _ writeValue: (inout JSONTextBuffer) -> Void) {
        self.key(key)
        writeValue(&text)
    }

    /// The separator and `"key":`, put in place in one append: a record has
    /// a dozen members and most answers carry one. Keys are the caller's
    /// own names and need no escaping.
    @inline(__always)
    private mutating func key(_ key: StaticString) {
        member(key, "", quoted: false)
    }

    /// ``key(_:)`` and `value`, text needing no escape, in quotes when
    /// `quoted`: the whole member in one append (the key alone for an
    /// empty, unquoted `value`).
    @inline(__always)
    private mutating func member(_ key: StaticString, _ value: StaticString, quoted: Bool) {
        let separator = isEmpty ? UInt8(ascii: "{") : UInt8(ascii: ",")
        isEmpty = false
        let name = key.utf8CodeUnitCount
        let quote = quoted ? 1 : 0
        let valueCount = value.utf8CodeUnitCount
        text.append(count: name + 4 + valueCount + 2 * quote) { member in
            member[0] = separator
            member[1] = UInt8(ascii: "\"")
            JSONTextBuffer.copy(key.utf8Start, to: member + 2, count: name)
            member[name + 2] = UInt8(ascii: "\"")
            member[name + 3] = UInt8(ascii: ":")
            if quoted { member[name + 4] = UInt8(ascii: "\"") }
            JSONTextBuffer.copy(value.utf8Start, to: member + name + 4 + quote, count: valueCount)
            if quoted { member[name + 5 + valueCount] = UInt8(ascii: "\"") }
        }
    }
}

/// Builds an object's members as a `JSONValue` dictionary.
package struct JSONObjectBuilder: JSONObjectSink {
    package private(set) var members: [String: JSONValue] = [:]

    package init() {}

    package mutating func value(_ key: StaticString, _ value: JSONValue) {
        members[key.description] = value
    }

    package mutating func string(_ key: StaticString, _ value: String) {
        members[key.description] = .string(value)
    }

    package mutating func strings(_ key: StaticString, _ values: [String]) {
        members[key.description] = .array(values.map(JSONValue.string))
    }
}
