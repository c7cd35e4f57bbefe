import PromiseJSON

/// One promise as a store keeps it: enough to rebuild the remote promise
/// after a restart — its place among the others, how it was made (so that
/// `then` links and combinators are re-armed), and its state.
///
/// Stores keep it as the JSON of ``json`` (one document per promise), so a
/// backend needs only the ``sequence`` (its key and its order) and a text
/// column; the SQLite store keeps the id beside them, to name bad rows.
public struct StoredPromise: Sendable, Hashable {
    public var id: String
    /// Creation order; children and combinators come after what they follow.
    public var sequence: Int
    public var kind: Kind
    /// The promise a `then` child follows.
    public var parentID: String?
    /// A combinator's inputs, in order.
    public var inputIDs: [String]?
    /// A `then` child's `on`.
    public var on: ThenTrigger?
    /// A `then … exec` child's command.
    public var exec: [String]?
    public var cwd: String?
    public var env: [String: String]?
    /// An `all`'s policy.
    public var policy: AllPolicy?
    /// An `all` that gives up its other inputs once one fails.
    public var stopOnFailure: Bool
    public var name: String?
    /// Milliseconds since 1970.
    public var created: Int64
    public var settled: Int64?
    public var state: State
    /// The value of a fulfilled promise, unless ``valueOfParent`` or
    /// ``valueOfInputs`` (then only what the references leave out, if anything).
    public var value: JSONValue?
    /// A fulfilled combinator whose value is made of its inputs' values:
    /// where each part comes from (``InputValueReferences/sources``), the
    /// rest in ``value``. Stored once, with the inputs, and shared with them
    /// again when restored (60 `all`s over one 200 KB value named 80 times
    /// wrote 977 MB).
    public var valueOfInputs: [Int?]?
    /// A fulfilled `then` child that has its parent's value: stored once,
    /// with the parent, and shared with it again when restored (1,000 `then`
    /// children of a 1 MB value wrote 1.9 GB, and held 986 MB after a restart).
    public var valueOfParent: Bool
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
    /// The pid (and process group) of this child's running command, and its
    /// start time (field 22 of `/proc/<pid>/stat`): a restart after a crash
    /// stops that group if the pid still has that start time. Absent in rows
    /// written before they were recorded.
    public var execPid: Int32?
    public var execStartTime: UInt64?
    /// The pool of a `then … exec` child, unless `default` (absent in rows
    /// written before pools: those are `default`).
    public var pool: String?
    /// A pending `then … exec` child waiting for a slot of its pool: its
    /// place in the queue (lower is first). A restart queues it again there.
    public var queueTicket: Int?
    /// When an exec step's command was launched (ms since 1970) and how it
    /// exited (128 + N when killed by signal N): the record's `started` and
    /// `exitStatus`, kept across restarts. Absent in documents written before
    /// they were stored, and for steps that never ran.
    public var started: Int64?
    public var exitStatus: Int32?
    /// A `then … exec` child's `retry` and `retryDelayMs`, and how many times
    /// its command was started: a restart runs a failed or lost command
    /// again while attempts remain. Absent when it has no retries.
    public var retry: Int?
    public var retryDelayMs: UInt64?
    public var attempts: Int?

    public init(
        id: String, sequence: Int, kind: Kind, parentID: String? = nil, inputIDs: [String]? = nil,
        on: ThenTrigger? = nil, exec: [String]? = nil, cwd: String? = nil, env: [String: String]? = nil,
        policy: AllPolicy? = nil, stopOnFailure: Bool = false, name: String? = nil, created: Int64, settled: Int64? = nil,
        state: State = .pending, value: JSONValue? = nil, reason: JSONValue? = nil,
        progress: Double? = nil, progressMessage: String? = nil, timeoutMilliseconds: UInt64? = nil,
        deadline: Int64? = nil, lease: Bool = false, execStarted: Bool = false, valueOfParent: Bool = false,
        execPid: Int32? = nil, execStartTime: UInt64? = nil,
        pool: String? = nil, queueTicket: Int? = nil, started: Int64? = nil, exitStatus: Int32? = nil,
        valueOfInputs: [Int?]? = nil, retry: Int? = nil, retryDelayMs: UInt64? = nil, attempts: Int? = nil
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
        self.stopOnFailure = stopOnFailure
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
        self.valueOfParent = valueOfParent
        self.execPid = execPid
        self.execStartTime = execStartTime
        self.pool = pool
        self.queueTicket = queueTicket
        self.started = started
        self.exitStatus = exitStatus
        self.valueOfInputs = valueOfInputs
        self.retry = retry
        self.retryDelayMs = retryDelayMs
        self.attempts = attempts
    }

    public var isPending: Bool { state == .pending }

    /// What removes this promise from a store.
    public var deletion: StoreDeletion { StoreDeletion(id: id, sequence: sequence) }
}

// MARK: JSON

extension StoredPromise {
    /// The stored document: members that are absent or false are left out.
    public var json: JSONValue {
        var builder = JSONObjectBuilder()
        documentMembers(into: &builder)
        return .object(builder.members)
    }

    /// The compact JSON text of ``json``, byte for byte, written without
    /// building it: a store writes one per changed promise per commit, and
    /// building then sorting the dictionary would be most of a commit's CPU
    /// time under load (docs/PERFORMANCE.md).
    ///
    /// ```swift
    /// let doc = String(decoding: promise.serializedJSON(), as: UTF8.self)
    /// ```
    public func serializedJSON() -> [UInt8] {
        JSONTextBuffer.bytes { text in
            JSONObjectWriter.append(to: &text) { documentMembers(into: &$0) }
        }
    }

    /// The document's members, in sorted key order.
    private func documentMembers<Sink: JSONObjectSink & ~Copyable>(into object: inout Sink) {
        object.value("attempts", ifPresent: attempts.map { .int($0) })
        object.value("created", .int(Int(created)))
        object.string("cwd", ifPresent: cwd)
        object.value("deadline", ifPresent: deadline.map { .int(Int($0)) })
        object.value("env", ifPresent: env.map { .object($0.mapValues(JSONValue.string)) })
        object.strings("exec", ifPresent: exec)
        object.value("execPid", ifPresent: execPid.map { .int(Int($0)) })
        object.value("execStartTime", ifPresent: execStartTime.map { .int(Int(clamping: $0)) })
        object.flag("execStarted", execStarted)
        object.value("exitStatus", ifPresent: exitStatus.map { .int(Int($0)) })
        object.string("id", id)
        object.strings("inputs", ifPresent: inputIDs)
        object.string("kind", kind.text)
        object.flag("lease", lease)
        object.string("name", ifPresent: name)
        object.string("on", ifPresent: on?.rawValue)
        object.string("parent", ifPresent: parentID)
        object.string("policy", ifPresent: policy?.rawValue)
        object.string("pool", ifPresent: pool)
        object.value("progress", ifPresent: progress.map(JSONValue.double))
        object.string("progressMessage", ifPresent: progressMessage)
        object.value("queueTicket", ifPresent: queueTicket.map { .int($0) })
        object.value("reason", ifPresent: reason)
        object.value("retry", ifPresent: retry.map { .int($0) })
        object.value("retryDelayMs", ifPresent: retryDelayMs.map { .int(Int(clamping: $0)) })
        object.value("sequence", .int(sequence))
        object.value("settled", ifPresent: settled.map { .int(Int($0)) })
        object.value("started", ifPresent: started.map { .int(Int($0)) })
        object.string("state", state.rawValue)
        object.flag("stopOnFailure", stopOnFailure)
        object.value("timeoutMs", ifPresent: timeoutMilliseconds.map { .int(Int(clamping: $0)) })
        object.value("value", ifPresent: value)
        object.value("valueOfInputs", ifPresent: valueOfInputs.map { .array($0.map { $0.map(JSONValue.int) ?? .null }) })
        object.flag("valueOfParent", valueOfParent)
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
            kind: try reader.required("kind", known: Kind.init(text:)),
            parentID: try reader.optional("parent", \.stringValue),
            inputIDs: try reader.optional("inputs", Reader.strings),
            on: try reader.optional("on", known: ThenTrigger.init(rawValue:)),
            exec: try reader.optional("exec", Reader.strings),
            cwd: try reader.optional("cwd", \.stringValue),
            env: try reader.optional("env", Reader.stringMap),
            policy: try reader.optional("policy", known: AllPolicy.init(rawValue:)),
            stopOnFailure: try reader.optional("stopOnFailure", \.boolValue) ?? false,
            name: try reader.optional("name", \.stringValue),
            created: Int64(try reader.required("created", \.intValue)),
            settled: try reader.optional("settled", \.intValue).map(Int64.init),
            state: try reader.required("state", known: State.init(rawValue:)),
            value: value,
            reason: members["reason"],
            progress: try reader.optional("progress", \.doubleValue),
            progressMessage: try reader.optional("progressMessage", \.stringValue),
            timeoutMilliseconds: try reader.optional("timeoutMs", \.intValue).map { UInt64(clamping: $0) },
            deadline: try reader.optional("deadline", \.intValue).map(Int64.init),
            lease: try reader.optional("lease", \.boolValue) ?? false,
            execStarted: try reader.optional("execStarted", \.boolValue) ?? false,
            valueOfParent: try reader.optional("valueOfParent", \.boolValue) ?? false,
            execPid: try reader.optional("execPid", \.intValue).flatMap { Int32(exactly: $0) },
            execStartTime: try reader.optional("execStartTime", \.intValue).flatMap { UInt64(exactly: $0) },
            pool: try reader.optional("pool", \.stringValue),
            queueTicket: try reader.optional("queueTicket", \.intValue),
            started: try reader.optional("started", \.intValue).map(Int64.init),
            exitStatus: try reader.optional("exitStatus", \.intValue).flatMap { Int32(exactly: $0) },
            valueOfInputs: try reader.optional("valueOfInputs", Reader.indexes),
            retry: try reader.optional("retry", \.intValue),
            retryDelayMs: try reader.optional("retryDelayMs", \.intValue).flatMap { UInt64(exactly: $0) },
            attempts: try reader.optional("attempts", \.intValue))
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

        /// A member that names one of `T`'s values. A name this code does not
        /// know (written by a newer daemon, or by hand) is refused, so that
        /// the row is quarantined rather than read as some default.
        func required<T>(_ key: String, known make: (String) -> T?) throws(PromiseStoreError) -> T {
            guard let value = try optional(key, known: make) else { throw PromiseStoreError("a stored promise has no \"\(key)\"") }
            return value
        }

        func optional<T>(_ key: String, known make: (String) -> T?) throws(PromiseStoreError) -> T? {
            guard let text = try optional(key, \.stringValue) else { return nil }
            guard let value = make(text) else {
                throw PromiseStoreError("stored promise \"\(members["id"]?.stringValue ?? "")\" has an unknown \(key) \"\(text)\"")
            }
            return value
        }

        static func strings(_ json: JSONValue) -> [String]? {
            guard let array = json.arrayValue else { return nil }
            let strings = array.compactMap(\.stringValue)
            return strings.count == array.count ? strings : nil
        }

        /// Input indexes or nulls.
        static func indexes(_ json: JSONValue) -> [Int?]? {
            guard let array = json.arrayValue else { return nil }
            var indexes: [Int?] = []
            indexes.reserveCapacity(array.count)
            for element in array {
                if element.isNull {
                    indexes.append(nil)
                } else if case .int(let index) = element, index >= 0 {
                    indexes.append(index)
                } else {
                    return nil
                }
            }
            return indexes
        }

        static func stringMap(_ json: JSONValue) -> [String: String]? {
            guard let object = json.objectValue else { return nil }
            let map = object.compactMapValues(\.stringValue)
            return map.count == object.count ? map : nil
        }
    }
}
