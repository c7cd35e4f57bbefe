/// A promise's record (docs/PROTOCOL.md, "The promise record"), as a
/// `JSONValue` and as JSON text.
///
/// Most answers are a record. Building it as a dictionary, then sorting its
/// members to write them, cost a third of the daemon's instructions per
/// create + resolve (callgrind); `writeRecord` writes the text in one pass.
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
    func writeRecord(now: Int64, maxChildren: Int, valueText: [UInt8]? = nil, to text: inout JSONTextBuffer) {
        JSONObjectWriter.append(to: &text) {
            recordMembers(now: now, maxChildren: maxChildren, valueText: valueText, into: &$0)
        }
    }

    /// Bytes of the JSON text of its value (0 unless fulfilled), counted up
    /// to a little past `limit` (nil: no limit).
    func valueByteCount(upTo limit: Int?) -> Int {
        guard let limit, case .success(let value)? = result else { return 0 }
        return value.serializedByteCount(upTo: limit)
    }

    /// The record's members, in sorted key order.
    private func recordMembers<Sink: JSONObjectSink & ~Copyable>(
        now: Int64, maxChildren: Int, valueText: [UInt8]?, into object: inout Sink
    ) {
        let result = result(stampingSettledAt: now)
        let job = self.job
        // A promise may have up to `maxPromises` children (and be the input of
        // as many combinators): listed in full, its record (in every answer
        // and notification about it) could pass the clients' line limit. The
        // rest of the children are read with `list` and `parent`.
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
        if case .then(let on, _) = kind { object.string("on", on) }
        object.string("parent", orNull: parentID)
        // Only while the command runs: a pid outlives its process and may be reused.
        object.value("pid", ifPresent: job?.process?.processID.map { .int(Int($0)) })
        if case .then(_, true) = kind { object.string("pool", ifPresent: job?.pool) }
        object.double("progress", progress)
        object.string("progressMessage", ifPresent: progressMessage)
        object.flag("queued", result == nil && (job?.isQueued ?? false))
        if case .failure(let error)? = result { object.value("reason", reason(for: error).json) }
        if let settled { object.int("settled", Int(settled)) } else { object.null("settled") }
        object.value("started", ifPresent: job?.launched.map { .int(Int($0)) })
        object.string("state", literal: Self.stateName(of: result))
        object.flag("stopOnFailure", stopOnFailure)
        object.value("timeoutMs", ifPresent: timeoutMilliseconds.map { .int(Int(clamping: $0)) })
        if case .success(let value)? = result { object.value("value", value, text: valueText) }
    }
}
