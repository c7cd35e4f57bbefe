/// One promise as a store keeps it: enough to rebuild the remote promise
/// after a restart — its place among the others, how it was made (so that
/// `then` links and combinators are re-armed), and its state.
///
/// Stores keep it as the JSON of ``json`` (one document per promise), so a
/// backend needs only a key, the ``sequence`` to order by, and a text column.
public struct StoredPromise: Sendable, Hashable {
    public var id: String
    /// Creation order; children and combinators come after what they follow.
    public var sequence: Int
    /// `created`, `then`, or the combinator's method (`all`, `any`, `race`, `allSettled`).
    public var kind: String
    /// The promise a `then` child follows.
    public var parentID: String?
    /// A combinator's inputs, in order.
    public var inputIDs: [String]?
    /// A `then` child's `on`.
    public var on: String?
    /// A `then … exec` child's command.
    public var exec: [String]?
    public var cwd: String?
    public var env: [String: String]?
    /// An `all`'s policy.
    public var policy: String?
    public var name: String?
    /// Milliseconds since 1970.
    public var created: Int64
    public var settled: Int64?
    /// `pending`, `fulfilled`, `rejected` or `cancelled`.
    public var state: String
    /// The value of a fulfilled promise.
    public var value: JSONValue?
    /// The reason of a rejected or cancelled one, as in its record.
    public var reason: JSONValue?
    /// Progress reported with the `progress` method (combinators derive theirs).
    public var progress: Double?
    public var progressMessage: String?
    public var timeoutMilliseconds: UInt64?
    /// When a pending promise with a timeout is rejected: milliseconds since 1970.
    public var deadline: Int64?
    /// Made with `lease: true`: rejected when its connection closes, and so
    /// at start-up, since every connection closed with the old daemon.
    public var lease: Bool
    /// The command of this `then … exec` child was started. A pending child
    /// whose command started is not started again after a restart.
    public var execStarted: Bool

    public init(
        id: String, sequence: Int, kind: String, parentID: String? = nil, inputIDs: [String]? = nil,
        on: String? = nil, exec: [String]? = nil, cwd: String? = nil, env: [String: String]? = nil,
        policy: String? = nil, name: String? = nil, created: Int64, settled: Int64? = nil,
        state: String = "pending", value: JSONValue? = nil, reason: JSONValue? = nil,
        progress: Double? = nil, progressMessage: String? = nil, timeoutMilliseconds: UInt64? = nil,
        deadline: Int64? = nil, lease: Bool = false, execStarted: Bool = false
    ) {
        self.id = id
        self.sequence = sequence
        self.kind = kind
        self.parentID = parentID
        self.inputIDs = inputIDs
        self.on = on
        self.exec = exec
        self.cwd = cwd
        self.env = env
        self.policy = policy
        self.name = name
        self.created = created
        self.settled = settled
        self.state = state
        self.value = value
        self.reason = reason
        self.progress = progress
        self.progressMessage = progressMessage
        self.timeoutMilliseconds = timeoutMilliseconds
        self.deadline = deadline
        self.lease = lease
        self.execStarted = execStarted
    }

    public var isPending: Bool { state == "pending" }
}

// MARK: JSON

extension StoredPromise {
    /// The stored document: members that are absent or false are left out.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "id": .string(id), "sequence": .int(sequence), "kind": .string(kind),
            "created": .int(Int(created)), "state": .string(state),
        ]
        members["parent"] = parentID.map(JSONValue.string)
        members["inputs"] = inputIDs.map { .array($0.map(JSONValue.string)) }
        members["on"] = on.map(JSONValue.string)
        members["exec"] = exec.map { .array($0.map(JSONValue.string)) }
        members["cwd"] = cwd.map(JSONValue.string)
        members["env"] = env.map { .object($0.mapValues(JSONValue.string)) }
        members["policy"] = policy.map(JSONValue.string)
        members["name"] = name.map(JSONValue.string)
        members["settled"] = settled.map { .int(Int($0)) }
        members["value"] = value
        members["reason"] = reason
        members["progress"] = progress.map(JSONValue.double)
        members["progressMessage"] = progressMessage.map(JSONValue.string)
        members["timeoutMs"] = timeoutMilliseconds.map { .int(Int(clamping: $0)) }
        members["deadline"] = deadline.map { .int(Int($0)) }
        if lease { members["lease"] = true }
        if execStarted { members["execStarted"] = true }
        return .object(members)
    }

    /// The compact JSON text of ``json``, byte for byte, written without
    /// building it: a store writes one per changed promise per commit, and
    /// building then sorting the dictionary was over half of a commit's
    /// CPU time under load (perf).
    ///
    /// ```swift
    /// let doc = String(decoding: promise.serializedJSON(), as: UTF8.self)
    /// ```
    public func serializedJSON() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(160)
        var object = JSONObjectWriter()
        object.key("created", into: &out)
        JSONValue.int(Int(created)).write(into: &out)
        if let cwd {
            object.key("cwd", into: &out)
            JSONValue.writeString(cwd, into: &out)
        }
        if let deadline {
            object.key("deadline", into: &out)
            JSONValue.int(Int(deadline)).write(into: &out)
        }
        if let env {
            object.key("env", into: &out)
            JSONValue.object(env.mapValues(JSONValue.string)).write(into: &out)
        }
        if let exec {
            object.key("exec", into: &out)
            JSONValue.writeStrings(exec, into: &out)
        }
        if execStarted {
            object.key("execStarted", into: &out)
            JSONValue.bool(true).write(into: &out)
        }
        object.key("id", into: &out)
        JSONValue.writeString(id, into: &out)
        if let inputIDs {
            object.key("inputs", into: &out)
            JSONValue.writeStrings(inputIDs, into: &out)
        }
        object.key("kind", into: &out)
        JSONValue.writeString(kind, into: &out)
        if lease {
            object.key("lease", into: &out)
            JSONValue.bool(true).write(into: &out)
        }
        if let name {
            object.key("name", into: &out)
            JSONValue.writeString(name, into: &out)
        }
        if let on {
            object.key("on", into: &out)
            JSONValue.writeString(on, into: &out)
        }
        if let parentID {
            object.key("parent", into: &out)
            JSONValue.writeString(parentID, into: &out)
        }
        if let policy {
            object.key("policy", into: &out)
            JSONValue.writeString(policy, into: &out)
        }
        if let progress {
            object.key("progress", into: &out)
            JSONValue.double(progress).write(into: &out)
        }
        if let progressMessage {
            object.key("progressMessage", into: &out)
            JSONValue.writeString(progressMessage, into: &out)
        }
        if let reason {
            object.key("reason", into: &out)
            reason.write(into: &out)
        }
        object.key("sequence", into: &out)
        JSONValue.int(sequence).write(into: &out)
        if let settled {
            object.key("settled", into: &out)
            JSONValue.int(Int(settled)).write(into: &out)
        }
        object.key("state", into: &out)
        JSONValue.writeString(state, into: &out)
        if let timeoutMilliseconds {
            object.key("timeoutMs", into: &out)
            JSONValue.int(Int(clamping: timeoutMilliseconds)).write(into: &out)
        }
        if let value {
            object.key("value", into: &out)
            value.write(into: &out)
        }
        object.end(into: &out)
        return out
    }

    /// Reads a document written by ``json``.
    ///
    /// - Throws: ``PromiseStoreError`` naming the member that is missing or of the wrong type.
    public init(json: JSONValue) throws(PromiseStoreError) {
        guard case .object(let members) = json else { throw PromiseStoreError("a stored promise is not an object") }
        let reader = Reader(members: members)
        let value = members["value"]
        self.init(
            id: try reader.required("id", \.stringValue),
            sequence: try reader.required("sequence", \.intValue),
            kind: try reader.required("kind", \.stringValue),
            parentID: try reader.optional("parent", \.stringValue),
            inputIDs: try reader.optional("inputs", Reader.strings),
            on: try reader.optional("on", \.stringValue),
            exec: try reader.optional("exec", Reader.strings),
            cwd: try reader.optional("cwd", \.stringValue),
            env: try reader.optional("env", Reader.stringMap),
            policy: try reader.optional("policy", \.stringValue),
            name: try reader.optional("name", \.stringValue),
            created: Int64(try reader.required("created", \.intValue)),
            settled: try reader.optional("settled", \.intValue).map(Int64.init),
            state: try reader.required("state", \.stringValue),
            value: value,
            reason: members["reason"],
            progress: try reader.optional("progress", \.doubleValue),
            progressMessage: try reader.optional("progressMessage", \.stringValue),
            timeoutMilliseconds: try reader.optional("timeoutMs", \.intValue).map { UInt64(clamping: $0) },
            deadline: try reader.optional("deadline", \.intValue).map(Int64.init),
            lease: try reader.optional("lease", \.boolValue) ?? false,
            execStarted: try reader.optional("execStarted", \.boolValue) ?? false)
        guard ["pending", "fulfilled", "rejected", "cancelled"].contains(state) else {
            throw PromiseStoreError("stored promise \"\(id)\" has an unknown state \"\(state)\"")
        }
    }

    /// Typed member access that names what is wrong.
    private struct Reader {
        let members: [String: JSONValue]

        func required<T>(_ key: String, _ read: (JSONValue) -> T?) throws(PromiseStoreError) -> T {
            guard let member = members[key] else { throw PromiseStoreError("a stored promise has no \"\(key)\"") }
            guard let value = read(member) else { throw PromiseStoreError("a stored promise has a malformed \"\(key)\"") }
            return value
        }

        func optional<T>(_ key: String, _ read: (JSONValue) -> T?) throws(PromiseStoreError) -> T? {
            guard let member = members[key], !member.isNull else { return nil }
            guard let value = read(member) else { throw PromiseStoreError("a stored promise has a malformed \"\(key)\"") }
            return value
        }

        static func strings(_ json: JSONValue) -> [String]? {
            guard let array = json.arrayValue else { return nil }
            let strings = array.compactMap(\.stringValue)
            return strings.count == array.count ? strings : nil
        }

        static func stringMap(_ json: JSONValue) -> [String: String]? {
            guard let object = json.objectValue else { return nil }
            let map = object.compactMapValues(\.stringValue)
            return map.count == object.count ? map : nil
        }
    }
}
