import PromiseJSON
import PromiseModel
import PromiseStore

/// A promise's record (docs/PROTOCOL.md, "The promise record"), as a
/// `JSONValue` and as JSON text.
///
/// Most answers are a record. `writeRecord` writes its text in one pass,
/// without building it as a dictionary and then sorting its members to
/// write them (docs/PERFORMANCE.md).
/// Both forms come from one member list (see ``JSONObjectSink``).
extension RemotePromise {
    /// The record, as every method returns it. `now` stamps `settled` when
    /// the registry has not yet seen the settlement; `children` lists at
    /// most `maxChildren` ids (`childrenOmitted` counts the rest).
    func record(now: Int64, maxChildren: Int) -> JSONValue {
        var builder = JSONObjectBuilder()
        recordMembers(now: now, maxChildren: maxChildren, valueText: nil, into: &builder)
        return .object(builder.members)
    }

    /// Appends the record's JSON text to `text`: the bytes of
    /// `record(now:maxChildren:).serialized()`, without building the record.
    /// `valueText`, when given, is its value's text, written once and shared
    /// (see ``ValueTextCache``).
    package func writeRecord(now: Int64, maxChildren: Int, valueText: [UInt8]? = nil, to text: inout JSONTextBuffer) {
        if details == nil, case .created = kind {
            return writePlainRecord(now: now, valueText: valueText, to: &text)
        }
        JSONObjectWriter.append(to: &text) {
            recordMembers(now: now, maxChildren: maxChildren, valueText: valueText, into: &$0)
        }
    }

    /// ``writeRecord(now:maxChildren:valueText:to:)`` for the commonest
    /// record: a promise made with `create`, with no details (no name,
    /// timeout, lease, progress message, parent or children…), as both
    /// promises of a create + resolve are. Its members are then known but for a few
    /// values, and the text between those values is appended in constant
    /// runs: after the id, a pending promise's record is one copy, where
    /// the member list (``recordMembers(now:maxChildren:valueText:into:)``)
    /// writes six members, each with its separator and key, and a fulfilled
    /// one's is three copies around its time and its value
    /// (docs/PERFORMANCE.md).
    ///
    /// Its text must stay that of the member list for the same promise:
    /// `RecordJSONTests` compares the two for each shape this takes. A
    /// member added to the list must be added here too, or be a reason for
    /// ``writeRecord(now:maxChildren:valueText:to:)`` not to come here.
    private func writePlainRecord(now: Int64, valueText: [UInt8]?, to text: inout JSONTextBuffer) {
        assert(parentID == nil && childIDs.isEmpty, "the then links are details")
        let result = result(stampingSettledAt: now)
        text.append(#"{"children":[],"created":"#)
        JSONValue.writeInt(Int(created), to: &text)
        text.append(#","id":"#)
        JSONValue.writeString(id, to: &text)
        switch result {
        case nil where settled == nil:
            // Its progress is 0: only a core promise (kept in the details)
            // reports any other while pending.
            assert(progress == 0 && progress.sign == .plus, "a pending promise without details is at 0")
            text.append(#","kind":"created","name":null,"parent":null,"progress":0.0,"settled":null,"state":"pending"}"#)
        case .success(let value)?:
            // Its progress is not read: a fulfilled promise's is 1 (see
            // `PromiseState.progress`), and so is the one a promise without
            // details keeps once compacted (`finalProgress`). Reading it
            // would take the promise's lock.
            assert(progress == 1, "a fulfilled promise's progress is 1")
            text.append(#","kind":"created","name":null,"parent":null,"progress":1.0,"settled":"#)
            // Stamped by `result(stampingSettledAt:)` if it was not yet.
            JSONValue.writeInt(Int(settled ?? now), to: &text)
            text.append(#","state":"fulfilled","value":"#)
            if let valueText { text.append(valueText) } else { value.write(to: &text) }
            text.append(UInt8(ascii: "}"))
        default:
            writePlainRecordTail(result: result, progress: progress, valueText: valueText, to: &text)
        }
    }

    /// The members of a plain record (see ``writePlainRecord(now:valueText:to:)``)
    /// that follow its id, in any state.
    private func writePlainRecordTail(result: Result<JSONValue, any Error>?, progress: Double,
                                      valueText: [UInt8]?, to text: inout JSONTextBuffer) {
        text.append(#","kind":"created","name":null,"parent":null,"progress":"#)
        JSONValue.writeDouble(progress, to: &text)
        if case .failure(let error)? = result {
            text.append(#","reason":"#)
            reason(for: error).json.write(to: &text)
        }
        if let settled {
            text.append(#","settled":"#)
            JSONValue.writeInt(Int(settled), to: &text)
        } else {
            text.append(#","settled":null"#)
        }
        text.append(#","state":""#)
        text.append(Self.stateName(of: result))
        text.append(UInt8(ascii: "\""))
        if case .success(let value)? = result {
            text.append(#","value":"#)
            if let valueText { text.append(valueText) } else { value.write(to: &text) }
        }
        text.append(UInt8(ascii: "}"))
    }

    /// Bytes of the JSON text of its value (0 unless fulfilled), counted up
    /// to a little past `limit` (nil: no limit).
    func valueByteCount(upTo limit: Int?) -> Int {
        guard let limit, case .success(let value)? = result else { return 0 }
        return value.serializedByteCount(upTo: limit)
    }

    /// The record's members, in sorted key order. ``writePlainRecord(now:valueText:to:)``
    /// writes those of the commonest records by hand: keep the two in step.
    private func recordMembers<Sink: JSONObjectSink & ~Copyable>(
        now: Int64, maxChildren: Int, valueText: [UInt8]?, into object: inout Sink
    ) {
        let result = result(stampingSettledAt: now)
        let job = self.job
        // A promise may have up to `maxPromises` children (and be the input of
        // as many combinators): listed in full, its record (in every answer
        // and notification about it) could pass the clients' line limit. The
        // rest of the children are read with `list` and `parent`.
        object.value("attempts", ifPresent: job.flatMap { $0.retries > 0 && $0.attempts > 0 ? .int($0.attempts) : nil })
        object.strings("children", childIDs.count > maxChildren ? Array(childIDs.prefix(maxChildren)) : childIDs)
        object.value("childrenOmitted", ifPresent: childIDs.count > maxChildren ? .int(childIDs.count - maxChildren) : nil)
        if let consumerIDs {
            object.strings("consumers", consumerIDs.count > maxChildren ? Array(consumerIDs.prefix(maxChildren)) : consumerIDs)
            object.value("consumersOmitted", ifPresent: consumerIDs.count > maxChildren ? .int(consumerIDs.count - maxChildren) : nil)
        }
        object.int("created", Int(created))
        if case .then(_, true) = kind { object.strings("exec", ifPresent: job?.spec.argv) }
        object.value("exitStatus", ifPresent: job?.exitStatus.map { .int(Int($0)) })
        object.string("id", id)
        object.strings("inputs", ifPresent: inputIDs)
        if let literal = kind.literalName { object.string("kind", literal: literal) } else { object.string("kind", kind.name) }
        object.flag("lease", lease)
        object.string("name", orNull: name)
        if case .then(let on, _) = kind { object.string("on", on.rawValue) }
        object.string("parent", orNull: parentID)
        // Only while the command runs: a pid outlives its process and may be reused.
        object.value("pid", ifPresent: job?.process?.processID.map { .int(Int($0)) })
        if case .then(_, true) = kind { object.string("pool", ifPresent: job?.pool) }
        object.double("progress", progress)
        object.string("progressMessage", ifPresent: progressMessage)
        object.flag("queued", result == nil && (job?.isQueued ?? false))
        if case .failure(let error)? = result { object.value("reason", reason(for: error).json) }
        object.value("retry", ifPresent: job.flatMap { $0.retries > 0 ? .int($0.retries) : nil })
        if let settled { object.int("settled", Int(settled)) } else { object.null("settled") }
        object.value("started", ifPresent: job?.launched.map { .int(Int($0)) })
        object.string("state", literal: Self.stateName(of: result))
        object.flag("stopOnFailure", stopOnFailure)
        object.value("timeoutMs", ifPresent: timeoutMilliseconds.map { .int(Int(clamping: $0)) })
        if case .success(let value)? = result { object.value("value", value, text: valueText) }
    }
}
